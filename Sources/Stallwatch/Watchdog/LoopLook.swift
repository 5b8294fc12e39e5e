import CSampler
import StallwatchPolicy
import Synchronization

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

/// What looks at one loop cost and found, for `bench`: counts, robust to a noisy machine.
package final class LookCounters: Sendable {
    let looks = Atomic<UInt64>(0)
    let cpuClockReads = Atomic<UInt64>(0)
    let procReads = Atomic<UInt64>(0)
    let busy = Atomic<UInt64>(0)
    let pings = Atomic<UInt64>(0)

    /// The counts at one instant.
    package struct Snapshot: Sendable, Equatable {
        /// Looks taken in place of pings.
        package var looks: UInt64
        /// CPU clock reads of the loop thread.
        package var cpuClockReads: UInt64
        /// `/proc` reads of the loop thread.
        package var procReads: UInt64
        /// Looks that found the loop busy between ticks.
        package var busy: UInt64
        /// Real pings posted to the loop (before its first tick, or for a loop without ticks).
        package var pings: UInt64
    }

    var snapshot: Snapshot {
        Snapshot(looks: looks.load(ordering: .relaxed), cpuClockReads: cpuClockReads.load(ordering: .relaxed),
                 procReads: procReads.load(ordering: .relaxed), busy: busy.load(ordering: .relaxed),
                 pings: pings.load(ordering: .relaxed))
    }
}
