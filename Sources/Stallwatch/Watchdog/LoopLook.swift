import CSampler
import StallwatchPolicy

/// Reads what ``LoopLookPolicy`` needs about a loop's thread, as cheaply as possible: its CPU clock
/// first (one system call, no file), and `/proc/self/task/TID/syscall` only when the clock moved
/// since a look last saw the thread asleep.
enum LoopLook {
    /// The thread's state, and its CPU time (ns) when read (to compare the next look against).
    static func readThread(_ tid: ThreadID, idleCPU: UInt64, counters: LookCounters) -> (state: LoopLookPolicy.ThreadState, cpu: UInt64) {
        let read = readThreadAndWait(tid, idleCPU: idleCPU, counters: counters)
        return (read.state, read.cpu)
    }

    /// ``readThread(_:idleCPU:counters:)``, plus the descriptor its system call waits on when it
    /// is an `epoll_wait` (its first argument): what a resting loop is watched through (``LoopRest``).
    static func readThreadAndWait(_ tid: ThreadID, idleCPU: UInt64, counters: LookCounters)
        -> (state: LoopLookPolicy.ThreadState, cpu: UInt64, epollFD: Int32?) {
        var cpu: UInt64 = 0
        counters.cpuClockReads.add(1, ordering: .relaxed)
        guard sw_thread_cpu_time_ns(tid.rawValue, &cpu) == 0 else { return (.unreadable, 0, nil) }
        if cpu == idleCPU { return (.unmovedSinceAsleep, cpu, nil) }
        var call = sw_thread_syscall_t()
        counters.procReads.add(1, ordering: .relaxed)
        guard sw_thread_syscall(tid.rawValue, &call) == 0 else { return (.unreadable, cpu, nil) }
        switch call.nr {
        case -2: return (.running, cpu, nil)
        case -1: return (.blockedOutsideSyscall, cpu, nil)
        default:
            let fd = LoopLookPolicy.epollWaits.contains(call.nr) ? Int32(truncatingIfNeeded: call.args.0) : nil
            return (.inSyscall(call.nr), cpu, fd)
        }
    }

    /// Whether the thread's CPU clock still reads `idleCPU` (it has not run since a look saw it
    /// asleep): one system call, no file.
    static func unmoved(_ tid: ThreadID, since idleCPU: UInt64) -> Bool {
        var cpu: UInt64 = 0
        return sw_thread_cpu_time_ns(tid.rawValue, &cpu) == 0 && cpu == idleCPU
    }
}
