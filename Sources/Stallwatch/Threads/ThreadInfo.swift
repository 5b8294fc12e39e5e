import CSampler

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A snapshot of one thread's kernel-visible facts, read from `/proc/self/task/<tid>` without
/// signalling the thread.
///
/// The fields come from three files read one after another, so a thread that changes state in
/// between can show, say, `sleeping` with a `running` syscall; callers that need agreement re-read.
package struct ThreadInfo: Hashable, Sendable, Codable {
    /// The thread.
    package let tid: ThreadID
    /// The thread's name (`comm`, at most 15 bytes, as set by `pthread_setname_np`).
    package let name: String
    /// Scheduler state.
    package let state: ThreadState
    /// The CPU the thread last ran on.
    package let lastCPU: Int
    /// CPU time spent in user mode, in clock ticks (`sysconf(_SC_CLK_TCK)` per second).
    package let userTicks: UInt64
    /// CPU time spent in the kernel on the thread's behalf, in clock ticks.
    package let systemTicks: UInt64
    /// Page faults served without I/O.
    package let minorFaults: UInt64
    /// Page faults that needed I/O.
    package let majorFaults: UInt64
    /// Signals the thread blocks (`SigBlk`); a sampler signal in this set would never be delivered.
    package let signalsBlocked: SignalSet
    /// What the thread is doing in the kernel.
    package let syscall: SyscallState

    /// Creates a snapshot from its parts (for tests and decoded reports).
    package init(
        tid: ThreadID, name: String, state: ThreadState, lastCPU: Int, userTicks: UInt64,
        systemTicks: UInt64, minorFaults: UInt64, majorFaults: UInt64, signalsBlocked: SignalSet,
        syscall: SyscallState
    ) {
        self.tid = tid
        self.name = name
        self.state = state
        self.lastCPU = lastCPU
        self.userTicks = userTicks
        self.systemTicks = systemTicks
        self.minorFaults = minorFaults
        self.majorFaults = majorFaults
        self.signalsBlocked = signalsBlocked
        self.syscall = syscall
    }

    /// Reads the facts of thread `tid` of this process.
    /// - Throws: ``ThreadError/threadGone(_:)`` when the thread has exited, or another ``ThreadError``.
    package static func read(_ tid: ThreadID) throws(ThreadError) -> ThreadInfo {
        try read(tid, stat: { sw_thread_stat(tid.rawValue, &$0) }, signalsBlocked: { sw_thread_sigblk(tid.rawValue, &$0) },
                 syscall: { sw_thread_syscall(tid.rawValue, &$0) })
    }

    private static func read(_ tid: ThreadID,
                             stat readStat: (inout sw_thread_stat_t) -> Int32,
                             signalsBlocked readMask: (inout UInt64) -> Int32,
                             syscall readSyscall: (inout sw_thread_syscall_t) -> Int32) throws(ThreadError) -> ThreadInfo {
        var stat = sw_thread_stat_t()
        var rc = readStat(&stat)
        guard rc == 0 else { throw ThreadError(code: rc, operation: "reading /proc/self/task/\(tid)/stat", thread: tid) }
        var mask: UInt64 = 0
        rc = readMask(&mask)
        guard rc == 0 else { throw ThreadError(code: rc, operation: "reading /proc/self/task/\(tid)/status", thread: tid) }
        var call = sw_thread_syscall_t()
        rc = readSyscall(&call)
        guard rc == 0 else { throw ThreadError(code: rc, operation: "reading /proc/self/task/\(tid)/syscall", thread: tid) }
        return ThreadInfo(
            tid: tid,
            name: name(in: stat),
            state: state(in: stat),
            lastCPU: Int(stat.last_cpu),
            userTicks: stat.utime_ticks,
            systemTicks: stat.stime_ticks,
            minorFaults: stat.minflt,
            majorFaults: stat.majflt,
            signalsBlocked: SignalSet(rawValue: mask),
            syscall: SyscallState(call))
    }

    /// The thread's name as `stat` gives it.
    static func name(in stat: sw_thread_stat_t) -> String {
        withUnsafeBytes(of: stat.name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// The thread's state as `stat` gives it.
    static func state(in stat: sw_thread_stat_t) -> ThreadState {
        ThreadState(procLetter: Character(Unicode.Scalar(UInt8(bitPattern: stat.state))))
    }

    /// Reads the scheduler's accounting for thread `tid`: time on a CPU and time spent runnable
    /// but waiting for one (the signature of CPU starvation).
    /// - Throws: ``ThreadError/threadGone(_:)`` when the thread has exited, or another ``ThreadError``
    ///   (the file is missing on kernels built without scheduler statistics).
    package static func schedStat(_ tid: ThreadID) throws(ThreadError) -> ThreadSchedStat {
        try schedStat(tid) { sw_thread_schedstat(tid.rawValue, &$0, &$1, &$2) }
    }

    /// The same through a descriptor kept open.
    package static func schedStat(_ files: TaskFiles) throws(ThreadError) -> ThreadSchedStat {
        try schedStat(files.tid) { files.schedstat(run: &$0, wait: &$1, timeslices: &$2) }
    }

    private static func schedStat(_ tid: ThreadID, reading read: (inout UInt64, inout UInt64, inout UInt64) -> Int32)
        throws(ThreadError) -> ThreadSchedStat {
        var run: UInt64 = 0
        var wait: UInt64 = 0
        var slices: UInt64 = 0
        let rc = read(&run, &wait, &slices)
        guard rc == 0 else {
            throw ThreadError(code: rc, operation: "reading /proc/self/task/\(tid)/schedstat", thread: tid)
        }
        return ThreadSchedStat(
            runTime: .nanoseconds(Int64(clamping: run)), waitTime: .nanoseconds(Int64(clamping: wait)),
            timeslices: slices)
    }

    /// User CPU time as a duration (tick resolution, usually 10 ms; use ``ThreadCPUClock`` for precision).
    package var userTime: Duration { Self.duration(ofTicks: userTicks) }

    /// System CPU time as a duration (tick resolution).
    package var systemTime: Duration { Self.duration(ofTicks: systemTicks) }

    private static let ticksPerSecond: Int64 = {
        let value = sysconf(Int32(_SC_CLK_TCK))
        return value > 0 ? Int64(value) : 100
    }()

    private static func duration(ofTicks ticks: UInt64) -> Duration {
        let ticks = Int64(clamping: ticks)
        return .seconds(ticks / ticksPerSecond) + .nanoseconds((ticks % ticksPerSecond) * 1_000_000_000 / ticksPerSecond)
    }
}
