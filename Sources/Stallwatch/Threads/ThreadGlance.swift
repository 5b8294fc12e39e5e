import CSampler

/// What a report lists of another thread: its name, its state and the system call it is blocked
/// in, from its `stat` and `syscall` files. Without the call's arguments or the signal mask: a
/// report lists every thread of the process, and the arguments' array was allocated for each
/// blocked one (a `status` read per thread bought nothing the report shows).
struct ThreadGlance {
    var name: String
    var state: ThreadState
    /// The number of the system call the thread is blocked in, `nil` when it is in none.
    var syscall: Int?

    /// `nil` when a file cannot be read (the thread is gone), as ``ThreadInfo/read(_:)`` throws then.
    static func read(_ tid: ThreadID) -> ThreadGlance? {
        var stat = sw_thread_stat_t()
        guard sw_thread_stat(tid.rawValue, &stat) == 0 else { return nil }
        var call = sw_thread_syscall_t()
        guard sw_thread_syscall(tid.rawValue, &call) == 0 else { return nil }
        // As SyscallState: -2 is running, -1 blocked outside a system call.
        let number = call.nr == -2 || call.nr == -1 ? nil : Int(call.nr)
        return ThreadGlance(name: ThreadInfo.name(in: stat), state: ThreadInfo.state(in: stat), syscall: number)
    }
}
