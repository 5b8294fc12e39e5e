/// A system call a thread is blocked in, with its raw arguments and the user-space registers
/// that let its stack be recovered without signalling it.
package struct BlockedSyscall: Hashable, Sendable, Codable {
    /// The architecture's system call number.
    package let number: Int
    /// A readable name (`"futex"`, `"epoll_wait"`), or `"syscall_<n>"` for numbers not in the table.
    package let name: String
    /// The six argument registers, as the kernel reports them (unused ones hold leftovers).
    package let arguments: [UInt64]
    /// User stack pointer at the system call.
    package let stackPointer: UInt64
    /// User program counter at the system call (just after the `syscall` instruction).
    package let programCounter: UInt64

    /// Creates a description of a blocked call; the name is looked up from `number`.
    package init(number: Int, arguments: [UInt64], stackPointer: UInt64, programCounter: UInt64) {
        self.number = number
        self.name = Self.name(of: number)
        self.arguments = arguments
        self.stackPointer = stackPointer
        self.programCounter = programCounter
    }

    /// The name of system call `number` on this architecture, or `"syscall_<n>"`.
    package static func name(of number: Int) -> String {
        names[number] ?? "syscall_\(number)"
    }

    /// The calls a stalled server thread is usually found in; others print as numbers.
    private static let names: [Int: String] = {
        #if arch(x86_64)
        return [
            0: "read", 1: "write", 2: "open", 3: "close", 7: "poll", 9: "mmap", 11: "munmap",
            17: "pread64", 18: "pwrite64", 19: "readv", 20: "writev", 23: "select", 24: "sched_yield",
            34: "pause", 35: "nanosleep", 40: "sendfile", 42: "connect", 43: "accept", 44: "sendto",
            45: "recvfrom", 46: "sendmsg", 47: "recvmsg", 61: "wait4", 72: "fcntl", 73: "flock",
            74: "fsync", 75: "fdatasync", 128: "rt_sigtimedwait", 130: "rt_sigsuspend", 202: "futex",
            230: "clock_nanosleep", 232: "epoll_wait", 247: "waitid", 257: "openat", 270: "pselect6",
            271: "ppoll", 281: "epoll_pwait", 288: "accept4", 295: "preadv", 296: "pwritev",
            299: "recvmmsg", 307: "sendmmsg", 426: "io_uring_enter", 441: "epoll_pwait2",
            449: "futex_waitv",
        ]
        #elseif arch(arm64)
        return [
            22: "epoll_pwait", 56: "openat", 63: "read", 64: "write", 65: "readv", 66: "writev",
            67: "pread64", 68: "pwrite64", 72: "pselect6", 73: "ppoll", 82: "fsync", 83: "fdatasync",
            98: "futex", 101: "nanosleep", 115: "clock_nanosleep", 124: "sched_yield", 202: "accept",
            203: "connect", 206: "sendto", 207: "recvfrom", 211: "sendmsg", 212: "recvmsg",
            242: "accept4", 260: "wait4", 426: "io_uring_enter", 441: "epoll_pwait2",
        ]
        #else
        return [:]
        #endif
    }()
}
