#!/usr/bin/env python3
"""Proves from the compiled objects what the signal handler can call.

Disassembles CSampler's objects (objdump -dr), follows every call from the signal handler through
the functions it reaches, and fails unless each external callee is on the async-signal-safe list
below: no malloc, no lock, no stdio, no libunwind, no dynamic loader. Indirect calls are allowed
only where the handler chains to the previously installed handler.

Usage: check-handler-safety.py OBJECT... (run by scripts/test.sh on the debug build)
"""
import re
import subprocess
import sys

ROOTS = ["sw_signal_handler"]
# External functions a handler may reach: all async-signal-safe, none allocates or locks.
ALLOWED_EXTERNAL = {"clock_gettime", "syscall", "memcpy", "memset", "__errno_location", "__stack_chk_fail",
                    # glibc >= 2.35 documents it AS-Safe: lock-free, unlike dl_iterate_phdr, which
                    # takes the loader lock a handler may have interrupted (the unwind-table walk).
                    "_dl_find_object",
                    # On POSIX's async-signal-safe list. Reached through the fault-safe read of
                    # unwind tables, which only walks off the sampled thread take (guard_tables).
                    "getpid",
                    # The Swift runtime's task-local lookup (request_tag.c): a pointer walk over the
                    # interrupted task's task-local list after a static-TLS read of the current task;
                    # no allocation, no lock, no system call (disassembled on Swift 6.3).
                    "swift_task_localValueGet"}
# Functions allowed an indirect call, and why.
INDIRECT_OK = {"sw_signal_chain": "calls the previously installed handler, as chaining requires"}

func_re = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
call_re = re.compile(r"\bcall\s+(\*?)(\S+)(?:\s+<([^>+]+)(\+0x[0-9a-f]+)?>)?")
reloc_re = re.compile(r"R_X86_64_(?:PLT32|PC32)\s+([^\s+-]+)")


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


def main():
    objects = sys.argv[1:]
    if not objects:
        print("check-handler-safety: no object files given", file=sys.stderr)
        return 2
    calls, indirect = parse(objects)
    missing = [r for r in ROOTS if r not in calls]
    if missing:
        print(f"check-handler-safety: handler entry points not found: {missing}", file=sys.stderr)
        return 2
    seen, stack, bad, edges = set(), list(ROOTS), [], []
    while stack:
        f = stack.pop()
        if f in seen:
            continue
        seen.add(f)
        if indirect.get(f) and f not in INDIRECT_OK:
            bad.append(f"{f}: indirect call")
        for callee in sorted(calls.get(f, ())):
            edges.append((f, callee))
            if callee in calls:
                stack.append(callee)
            elif callee not in ALLOWED_EXTERNAL:
                bad.append(f"{f} -> {callee}")
    internal = sorted(seen)
    external = sorted({c for _, c in edges if c not in calls})
    print(f"handler reaches {len(internal)} functions of ours: {', '.join(internal)}")
    print(f"and these outside ones: {', '.join(external) or 'none'}")
    if bad:
        print("NOT async-signal-safe:\n  " + "\n  ".join(bad), file=sys.stderr)
        return 1
    print("handler safety: every callee is async-signal-safe; no allocation, no lock")
    return 0


if __name__ == "__main__":
    sys.exit(main())
