import CSampler

/// What `/proc/self/task/<tid>/syscall` says a thread is doing in the kernel.
package enum SyscallState: Hashable, Sendable, Codable {
    /// The thread is on a CPU (or runnable); the kernel does not report registers for it.
    case running
    /// Blocked in the kernel but not inside a system call (for example on a page fault),
    /// with the user stack pointer and program counter at that point.
    case blockedOutsideSyscall(sp: UInt64, pc: UInt64)
    /// Blocked inside a system call.
    case inSyscall(BlockedSyscall)

    /// Interprets the C view; `nr` -2 means running and -1 blocked outside a syscall.
    init(_ raw: sw_thread_syscall_t) {
        switch raw.nr {
        case -2:
            self = .running
        case -1:
            self = .blockedOutsideSyscall(sp: raw.sp, pc: raw.pc)
        default:
            let args = raw.args
            self = .inSyscall(
                BlockedSyscall(
                    number: Int(raw.nr),
                    arguments: [args.0, args.1, args.2, args.3, args.4, args.5],
                    stackPointer: raw.sp,
                    programCounter: raw.pc))
        }
    }

    /// The system call the thread is blocked in, if any.
    package var blockedSyscall: BlockedSyscall? {
        if case .inSyscall(let call) = self { return call }
        return nil
    }
}
