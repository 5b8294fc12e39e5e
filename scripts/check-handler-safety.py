#!/usr/bin/env python3
"""Proves from the compiled objects what the signal handler can call, path by path.

Disassembles CSampler's objects (objdump -dr), follows every call from the signal handler through
the functions it reaches, and fails unless:

1. every external callee of the whole handler is on the async-signal-safe list below: no malloc,
   no lock, no stdio, no libunwind, no dynamic loader;
2. the timer ring's path (the dispatcher's timer branch, sw_ring_on_signal and everything it
   reaches) makes no system call at all: no `syscall()`, no `syscall` instruction, no libc
   function that is a system-call wrapper. Its external callees must be on RING_EXTERNAL, each
   provably no system call (clock_gettime: the vDSO, see below);
3. the request/answer path (sw_capture_answer and what it reaches) makes system calls only
   through the wrappers listed in REQUEST_SYSCALLS, each with its reason;
4. the dispatcher calls nothing it is not known to call (a new callee there would run on both
   paths, so it is checked as part of the ring's).

Indirect calls are allowed only where the handler chains to the previously installed handler.

Usage: check-handler-safety.py OBJECT...        (run by scripts/test.sh on the debug build)
       check-handler-safety.py --self-test OBJECT...  (plants system calls in a copy of the call
       graph — on the ring path, in the dispatcher, a raw `syscall` instruction, an unlisted
       wrapper on the request path — and fails unless every plant is caught)
"""
import copy
import re
import subprocess
import sys

DISPATCHER = "sw_signal_handler"
RING_ROOT = "sw_ring_on_signal"
REQUEST_ROOT = "sw_capture_answer"
# The dispatcher's callees that run only on the request branch or the chaining branch, never on
# the timer branch (signal_handler.c: the SI_QUEUE test short-circuits before sw_signal_owner_pid).
DISPATCH_NOT_RING = {"sw_capture_answer": "request branch", "sw_signal_owner_pid": "request branch (a load)",
                     "sw_signal_chain": "not ours: the handler installed before"}

# External functions the ring path may reach: none is a system call.
RING_EXTERNAL = {
    # CLOCK_MONOTONIC is served by the vDSO (a read of the shared vvar page and the TSC / the
    # arm64 counter) whenever the kernel's clocksource is vDSO-capable (tsc, kvm-clock,
    # arch_sys_counter). Only a clocksource without vDSO support (hpet, acpi_pm) falls back to the
    # system call: the runtime test (PerfSamplingTests/ringHandlerMakesNoSystemCall) counts the
    # sampled thread's system calls and would see it.
    "clock_gettime",
    "memcpy", "memset", "__errno_location", "__stack_chk_fail",
    # glibc >= 2.35 documents it AS-Safe and lock-free: reads of ld.so's object table, no system call.
    "_dl_find_object",
    # The Swift runtime's task-local lookup (request_tag.c): a pointer walk over the interrupted
    # task's task-local list after a static-TLS read of the current task; no allocation, no lock,
    # no system call (disassembled on Swift 6.3).
    "swift_task_localValueGet",
    # The running task's id and priority (task_identity.c), only for a stack that runs a task job:
    # the same thread-local read, then loads of the task's fields (the priority through a 16-byte
    # atomic compare-exchange that writes back what it read); no allocation, no lock, no system
    # call (disassembled on Swift 6.3).
    "swift_task_getCurrent", "swift_task_getJobTaskId", "swift_task_currentPriority",
}
# Our functions that make a system call on the request path, and why each is needed there.
REQUEST_SYSCALLS = {
    "sw_futex_wake_all": "FUTEX_WAKE: the answer to the waiting requester (and a snapshot's release)",
    "sw_futex_wait_ns": "FUTEX_WAIT: a snapshot's parked handler, bounded by the hold limit",
    "serve_coalesced": "gettid: only when another request is armed (coalesced signals)",
    "range_mapped": "mincore: a stack that is neither below the thread pointer nor the main "
                    "thread's (a coroutine's, an alternate signal stack)",
}
# External functions the request path may reach besides RING_EXTERNAL.
REQUEST_EXTERNAL = {"syscall"}
# Functions allowed an indirect call, and why.
INDIRECT_OK = {"sw_signal_chain": "calls the previously installed handler, as chaining requires"}
SYSCALL_INSN = "<syscall instruction>"

func_re = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
call_re = re.compile(r"\bcall\s+(\*?)(\S+)(?:\s+<([^>+]+)(\+0x[0-9a-f]+)?>)?")
reloc_re = re.compile(r"R_X86_64_(?:PLT32|PC32)\s+([^\s+-]+)")
syscall_insn_re = re.compile(r"^\s*[0-9a-f]+:\s+(syscall|svc\s)")


def parse(objects):
    calls, indirect = {}, {}
    for obj in objects:
        out = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", obj], check=True,
                             capture_output=True, text=True).stdout.splitlines()
        current, pending = None, False
        for line in out:
            m = func_re.match(line.strip())
            if m:
                current = m.group(1)
                calls.setdefault(current, set())
                pending = False
                continue
            if current is None:
                continue
            if syscall_insn_re.match(line):
                calls[current].add(SYSCALL_INSN)
                continue
            r = reloc_re.search(line)
            if r and pending:
                calls[current].add(r.group(1))
                pending = False
                continue
            c = call_re.search(line)
            if c:
                if c.group(1) == "*":
                    indirect.setdefault(current, 0)
                    indirect[current] += 1
                    pending = False
                elif c.group(3) and c.group(3) != current and not c.group(4):
                    calls[current].add(c.group(3))  # a local call resolved by objdump
                    pending = False
                else:
                    pending = True  # the target is in the next relocation line
    return calls, indirect


def closure(calls, roots):
    """Our functions reached from roots, and the (caller, external callee) edges."""
    seen, stack, external = set(), list(roots), []
    while stack:
        f = stack.pop()
        if f in seen or f not in calls:
            continue
        seen.add(f)
        for callee in sorted(calls[f]):
            if callee in calls:
                stack.append(callee)
            else:
                external.append((f, callee))
    return seen, external


def check(calls, indirect, quiet=False):
    """Returns the list of violations (empty: safe)."""
    say = (lambda *a: None) if quiet else print
    missing = [r for r in (DISPATCHER, RING_ROOT, REQUEST_ROOT) if r not in calls]
    if missing:
        return [f"handler entry points not found: {missing}"]
    bad = []
    # 1. The whole handler: async-signal-safe externals, indirect calls only where chaining.
    everything, ext = closure(calls, [DISPATCHER])
    for f in sorted(everything):
        if indirect.get(f) and f not in INDIRECT_OK:
            bad.append(f"{f}: indirect call")
    allowed_any = RING_EXTERNAL | REQUEST_EXTERNAL
    for f, callee in ext:
        if callee not in allowed_any:
            bad.append(f"{f} -> {callee}: not on the async-signal-safe list")
    # 2. The ring path: the dispatcher's own callees except the other branches', and the ring.
    ring_roots = [RING_ROOT] + [c for c in calls[DISPATCHER] if c in calls and c not in DISPATCH_NOT_RING]
    ring, ring_ext = closure(calls, ring_roots)
    for f, callee in ring_ext:
        if callee == SYSCALL_INSN:
            bad.append(f"ring path: {f} executes a syscall instruction")
        elif callee == "syscall":
            bad.append(f"ring path: {f} -> syscall (a system call in the timer ring's handler)")
        elif callee not in RING_EXTERNAL:
            bad.append(f"ring path: {f} -> {callee}: not provably free of system calls")
    for f in sorted(ring):
        if indirect.get(f):
            bad.append(f"ring path: {f}: indirect call")
    for f in sorted(set(calls[DISPATCHER]) - set(DISPATCH_NOT_RING)):
        if f not in calls and f not in RING_EXTERNAL:
            bad.append(f"dispatcher -> {f}: unknown callee (it would run on the ring path)")
    # 3. The request path: system calls only through the listed wrappers.
    request, request_ext = closure(calls, [REQUEST_ROOT])
    request_syscalls = set()
    for f, callee in request_ext:
        if callee in ("syscall", SYSCALL_INSN):
            if f in REQUEST_SYSCALLS:
                request_syscalls.add(f)
            else:
                bad.append(f"request path: {f} makes a system call; allowed only in {sorted(REQUEST_SYSCALLS)}")
        elif callee not in RING_EXTERNAL | REQUEST_EXTERNAL:
            bad.append(f"request path: {f} -> {callee}: not allowed")
    say(f"handler reaches {len(everything)} functions of ours: {', '.join(sorted(everything))}")
    say(f"and these outside ones: {', '.join(sorted({c for _, c in ext})) or 'none'}")
    say(f"timer ring path: {len(ring)} functions ({', '.join(sorted(ring))}); outside: "
        f"{', '.join(sorted({c for _, c in ring_ext})) or 'none'}")
    say("request path system calls: " + "; ".join(f"{f} ({REQUEST_SYSCALLS[f]})" for f in sorted(request_syscalls)))
    return bad


def self_test(calls, indirect):
    """Each plant must be caught; the unplanted graph must pass."""
    failures = []
    if check(calls, indirect, quiet=True):
        failures.append("the unplanted graph does not pass")
    deep = "sw_walk_live" if "sw_walk_live" in calls else RING_ROOT
    plants = {
        "syscall() in the ring handler": (RING_ROOT, "syscall"),
        "getpid() (a libc wrapper) deep in the ring walk": (deep, "getpid"),
        "a raw syscall instruction in the ring walk": (deep, SYSCALL_INSN),
        "the request path's futex wake called from the ring": (RING_ROOT, "sw_futex_wake_all"),
        "the mincore check called from the ring": (RING_ROOT, "sw_mapped_end"),
        "a new callee of the dispatcher that makes a system call": (DISPATCHER, "sw_read_own"),
        "an unlisted system call on the request path": (REQUEST_ROOT, "sw_read_own"),
    }
    for name, (caller, callee) in plants.items():
        planted = copy.deepcopy(calls)
        planted[caller].add(callee)
        caught = check(planted, indirect, quiet=True)
        print(f"  plant: {name}: {'caught: ' + caught[0] if caught else 'NOT CAUGHT'}")
        if not caught:
            failures.append(name)
    return failures


def main():
    args = sys.argv[1:]
    selftest = bool(args) and args[0] == "--self-test"
    objects = args[1:] if selftest else args
    if not objects:
        print("check-handler-safety: no object files given", file=sys.stderr)
        return 2
    calls, indirect = parse(objects)
    if selftest:
        failures = self_test(calls, indirect)
        if failures:
            print("check-handler-safety self-test FAILED: " + "; ".join(failures), file=sys.stderr)
            return 1
        print("check-handler-safety self-test: every planted system call was caught")
        return 0
    bad = check(calls, indirect)
    if bad:
        print("NOT SAFE:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print("handler safety: every callee is async-signal-safe; no allocation, no lock; "
          "the timer ring's path makes no system call; the request path only the listed ones")
    return 0


if __name__ == "__main__":
    sys.exit(main())
