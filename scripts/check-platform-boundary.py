#!/usr/bin/env python3
"""Keeps the Swift layers' platform line along one boundary, so that the package builds on macOS.

No macOS machine builds this package here, so what would break there is checked in the source:

1. every Swift file under Sources/ that imports the C library does so with exactly the one
   conditional block below (Glibc, Musl or Darwin, whichever the platform has), never with a bare
   `import Glibc`, a qualified call (`Glibc.read`) or a block that leaves a platform out;
2. outside the boundary (a `Platform/` folder of a target: one file per platform-specific
   service) no file asks which platform it is on (`#if os(...)`, `canImport(...)` beyond that
   block, `STALLWATCH_PORTABLE_ONLY`) and none names an API that exists only on Linux or only in
   glibc (the LINUX_ONLY list: `gettid`, `CLOCK_BOOTTIME`, `st_mtim`, `__priority_which_t`, ...).
   Comments and string literals are not code and are not searched.

Architecture conditions (`#if arch(...)`) are allowed anywhere: they do not change the platform.

Usage: check-platform-boundary.py              (checks Sources/; run by scripts/portable-check.sh)
       check-platform-boundary.py --self-test  (plants each kind of violation in a copy of a real
       engine file and fails unless every plant is caught, and unless the same text is accepted
       where it is allowed: inside Platform/, in a comment, in a string)
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = ROOT / "Sources"

IMPORT_BLOCK = (
    "#if canImport(Glibc)\n"
    "import Glibc\n"
    "#elseif canImport(Musl)\n"
    "import Musl\n"
    "#elseif canImport(Darwin)\n"
    "import Darwin\n"
    "#endif\n"
)

LIBC_IMPORT = re.compile(r"^[ \t]*(?:@\w+[ \t]+)*import[ \t]+(?:(?:struct|func|var|let|enum|class)[ \t]+)?"
                         r"(Glibc|Musl|Darwin|SwiftGlibc|WinSDK|ucrt|Android|Bionic)\b", re.M)

# Platform questions only a Platform/ file may ask.
PLATFORM_CONDITION = re.compile(r"\bos\s*\(|\bcanImport\s*\(|\bSTALLWATCH_PORTABLE_ONLY\b|\btargetEnvironment\s*\(")

# APIs that exist only on Linux, only in glibc, or whose Swift types differ between glibc and
# Darwin so that one spelling cannot compile on both. Each with what to use instead.
LINUX_ONLY = [
    (r"\b(?:Glibc|Musl|Darwin|SwiftGlibc)\s*\.", "a module-qualified C call (systemRead, or a Platform/ wrapper)"),
    (r"\b__libc_\w+", "a glibc-internal function (RealtimeSignals)"),
    (r"\b__(?:priority_which|rlimit_resource|rusage_who|itimer_which|socket_type)\w*", "a glibc enum type (ThreadPriority, SocketType)"),
    (r"\b__RLIMIT_\w+|\bRLIMIT_NICE\b|\bRLIMIT_RTPRIO\b", "a Linux rlimit (ThreadPriority)"),
    (r"\b(?:get|set)priority\s*\(|\bPRIO_PROCESS\b", "per-thread nice values are Linux's (ThreadPriority)"),
    (r"\bSOCK_(?:STREAM|DGRAM|RAW|SEQPACKET)\b", "socket types differ in type (SocketType)"),
    (r"(?<![.\w])gettid\s*\(", "no gettid on Darwin (ThreadID, sw_current_tid)"),
    (r"(?<![.\w])syscall\s*\(|\bSYS_\w+", "raw system calls are Linux's (the C core)"),
    (r"\bCLOCK_(?:BOOTTIME|MONOTONIC_COARSE|REALTIME_COARSE|TAI)\b", "a Linux clock (BootClock, CoarseClock)"),
    (r"\bclock_nanosleep\b|\bTIMER_ABSTIME\b|\btimer_(?:create|settime|delete)\b", "no POSIX timers on Darwin"),
    (r"\bst_[amc]tim(?:espec)?\b", "stat's time fields differ (stat.modificationMilliseconds)"),
    (r"\bpthread_create\b|\bpthread_t\b", "pthread_t is an integer in glibc, a non-Sendable pointer on Darwin (PlatformThread)"),
    (r"\bpthread_(?:setname_np|getattr_np|sigqueue)\b", "a glibc pthread extension"),
    (r"\bdlsym\s*\(\s*(?:nil|UnsafeMutableRawPointer\s*\(\s*bitPattern:\s*0\s*\))|\bRTLD_DEFAULT\b",
     "the default symbol scope is spelt differently (LoadedSymbols)"),
    (r"(?<![.\w])(?:epoll_\w+|eventfd|timerfd_\w+|inotify_\w+|signalfd|memfd_create|pipe2|accept4|dup3|"
     r"prctl|sysinfo|sched_getcpu|sched_[gs]etaffinity|get_nprocs\w*|getauxval|dl_iterate_phdr|"
     r"malloc_usable_size|malloc_trim|mallinfo2?|process_vm_readv|perf_event_open|sigqueue|"
     r"posix_fadvise|splice|tgkill)\s*\(", "a Linux-only call (the C core, or a Platform/ wrapper)"),
    (r"\b(?:cpu_set_t|CPU_(?:SET|ZERO|ISSET)|RUSAGE_THREAD|MSG_NOSIGNAL|O_PATH|O_TMPFILE|SIGRTMIN|SIGRTMAX|"
     r"SIGEV_THREAD_ID|dl_phdr_info|Elf64_\w+|link_map)\b", "a Linux-only name"),
]
LINUX_ONLY = [(re.compile(pattern), why) for pattern, why in LINUX_ONLY]


def in_boundary(path):
    """Whether `path` (relative to the package) is a platform file: Sources/<target>/Platform/..."""
    parts = pathlib.PurePosixPath(path).parts
    return len(parts) >= 4 and parts[0] == "Sources" and parts[2] == "Platform"


def code_only(text):
    """`text` with comments and string literals blanked (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith('"""', i):
            j = text.find('"""', i + 3)
            j = n if j < 0 else j + 3
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] not in '"\n':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def violations(path, text):
    """What is wrong with Swift file `path` (relative) holding `text`: (line, message) pairs."""
    found = []
    imports = [m for m in LIBC_IMPORT.finditer(text)]
    blocks = [m.start() for m in re.finditer(re.escape(IMPORT_BLOCK), text)]
    if len(blocks) > 1:
        found.append((text.count("\n", 0, blocks[1]) + 1, "the C library import block appears twice"))
    covered = set()
    for start in blocks:
        covered.update(m.start() for m in LIBC_IMPORT.finditer(text, start, start + len(IMPORT_BLOCK)))
    for m in imports:
        if m.start() not in covered:
            found.append((text.count("\n", 0, m.start()) + 1,
                          f"`import {m.group(1)}` outside the one conditional block (Glibc / Musl / Darwin)"))
    if in_boundary(path):
        return found
    # The import block's own conditions are the one platform question every file may ask.
    code = code_only(text.replace(IMPORT_BLOCK, "\n" * IMPORT_BLOCK.count("\n")))
    for number, line in enumerate(code.split("\n"), 1):
        if line.lstrip().startswith("#") and PLATFORM_CONDITION.search(line):
            found.append((number, "a platform condition outside Sources/*/Platform/"))
        for pattern, why in LINUX_ONLY:
            m = pattern.search(line)
            # A declaration of one's own function with a C function's name is not a call of it.
            if m and not re.search(r"\bfunc\s+$", line[:m.start()]):
                found.append((number, f"`{m.group(0).strip()}` outside Sources/*/Platform/: {why}"))
    return found


def check_tree():
    files = sorted(p for p in SOURCES.rglob("*.swift") if ".build" not in p.parts)
    if not files:
        print("platform boundary: no Swift files under Sources/", file=sys.stderr)
        return 1
    failures = 0
    for p in files:
        rel = p.relative_to(ROOT).as_posix()
        for line, message in violations(rel, p.read_text()):
            print(f"{rel}:{line}: {message}", file=sys.stderr)
            failures += 1
    platform = sum(1 for p in files if in_boundary(p.relative_to(ROOT).as_posix()))
    if failures:
        print(f"platform boundary: {failures} violation(s)", file=sys.stderr)
        return 1
    print(f"platform boundary: {len(files)} Swift files, {platform} of them in Platform/; "
          "no platform question or Linux-only API outside it")
    return 0


# Each plant: a change to a clean engine file that must be caught, and whether the same change is
# accepted inside Platform/ (imports never are: the block is the same everywhere).
PLANTS = [
    ("bare import", lambda t: "import Glibc\n" + t, False),
    ("second import", lambda t: "import Darwin\n" + t, False),
    ("block without Darwin", lambda t: "#if canImport(Glibc)\nimport Glibc\n#elseif canImport(Musl)\nimport Musl\n#endif\n" + t, False),
    ("qualified call", lambda t: t + "\nfunc planted(_ fd: Int32) -> Int { Glibc.read(fd, nil, 0) }\n", True),
    ("gettid", lambda t: t + "\nlet plantedTid = gettid()\n", True),
    ("raw syscall", lambda t: t + "\nlet plantedTid = syscall(SYS_gettid)\n", True),
    ("boot clock", lambda t: t + "\nlet plantedClock = CLOCK_BOOTTIME\n", True),
    ("st_mtim", lambda t: t + "\nfunc planted(_ s: stat) -> Int { s.st_mtim.tv_sec }\n", True),
    ("glibc enum", lambda t: t + "\nlet planted = __priority_which_t(PRIO_PROCESS.rawValue)\n", True),
    ("socket type", lambda t: t + "\nlet planted = Int32(SOCK_STREAM.rawValue)\n", True),
    ("pthread", lambda t: t + "\nvar planted = pthread_t()\n", True),
    ("epoll", lambda t: t + "\nlet planted = epoll_create1(0)\n", True),
    ("default symbol scope", lambda t: t + "\nlet planted = dlsym(UnsafeMutableRawPointer(bitPattern: 0), \"x\")\n", True),
    ("os condition", lambda t: t + "\n#if os(Linux)\nlet planted = 1\n#endif\n", True),
    ("portable flag", lambda t: t + "\n#if !STALLWATCH_PORTABLE_ONLY\nlet planted = 1\n#endif\n", True),
]

# Text that names the same things without being code that uses them: never a violation.
HARMLESS = [
    ("comment", "\n// gettid(), CLOCK_BOOTTIME, st_mtim and Glibc.read live behind Platform/.\n"),
    ("doc comment", "\n/// `#if os(Linux)`: see ``ThreadPriority``; SOCK_STREAM too.\n"),
    ("block comment", "\n/* syscall(SYS_gettid) */\n"),
    ("string", '\nlet plantedMessage = "epoll_wait( blocked; SIGRTMIN+2; import Glibc"\n'),
    ("method named like a call", "\nstruct Planted { func syscall(_ x: Int) -> Int { x } }\nlet planted = Planted().syscall(1)\n"),
    ("architecture condition", "\n#if arch(x86_64)\nlet planted = 1\n#endif\n"),
]


def self_test():
    engine = "Sources/Stallwatch/Watchdog/Watchdog.swift"
    platform = "Sources/Stallwatch/Platform/Planted.swift"
    text = (ROOT / engine).read_text()
    problems = []
    if violations(engine, text):
        problems.append(f"{engine} is not clean to start with: {violations(engine, text)}")
    for name, plant, allowed_in_platform in PLANTS:
        planted = plant(text)
        if not violations(engine, planted):
            problems.append(f"missed in the engine: {name}")
        if allowed_in_platform and violations(platform, planted):
            problems.append(f"refused inside Platform/: {name}: {violations(platform, planted)}")
        if not allowed_in_platform and not violations(platform, planted):
            problems.append(f"missed inside Platform/: {name}")
    for name, extra in HARMLESS:
        if violations(engine, text + extra):
            problems.append(f"false alarm on a {name}: {violations(engine, text + extra)}")
    if problems:
        print("platform boundary self-test: FAIL", file=sys.stderr)
        for p in problems:
            print("  " + p, file=sys.stderr)
        return 1
    print(f"platform boundary self-test: {len(PLANTS)} plants caught, {len(HARMLESS)} harmless texts accepted")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    if sys.argv[1:]:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(check_tree())
