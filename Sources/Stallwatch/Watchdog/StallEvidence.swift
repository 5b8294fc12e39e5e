import CSampler
import Glibc
import StallwatchPolicy
import StallwatchReport

/// CPU, run-queue and wall time of a thread at one moment, to compare with later.
struct ThreadBaseline {
    var thread: ThreadID
    var stamp: MonotonicInstant        // the busy stamp this baseline belongs to
    var takenAt: MonotonicInstant
    var cpuTime: Duration
    var runQueueWait: Duration?

    static func take(_ thread: ThreadID, stamp: MonotonicInstant, now: MonotonicInstant) -> ThreadBaseline? {
        // Wall and CPU time are read together: deltas against the round's `now` would not match.
        let at = MonotonicClock.now()
        guard let cpu = try? ThreadCPUClock(thread).elapsed() else { return nil }
        let wait = try? ThreadInfo.schedStat(thread).waitTime
        return ThreadBaseline(thread: thread, stamp: stamp, takenAt: at, cpuTime: cpu, runQueueWait: wait)
    }
}

/// Gathers what the cause classifier needs about a stalled thread, without signalling it.
enum StallEvidence {
    /// Syscalls whose first argument is the file descriptor they wait on (by name: the numbers are
    /// the architecture's, from ``SyscallNumber``).
    private static let fdFirstSyscalls: Set<Int> = {
        typealias S = SyscallNumber
        return Set([S.read, S.write, S.pread64, S.pwrite64, S.readv, S.writev, S.connect, S.accept, S.sendto,
                    S.recvfrom, S.sendmsg, S.recvmsg, S.fsync, S.fdatasync, S.epollWait, S.epollPwait,
                    S.accept4, S.epollPwait2].filter { $0 != S.unavailable })
    }()

    /// `threads` is storage for listing the process's threads, reused from call to call.
    static func gather(thread: ThreadID, baseline: ThreadBaseline?, now: MonotonicInstant,
                       threadCount: Int, threads: inout [ThreadID]) -> (evidence: ThreadEvidence, info: ThreadInfo?) {
        let info = try? ThreadInfo.read(thread)
        let state: Character = info?.state.procLetter ?? "?"
        var syscall: Int?
        var fdKind: FDKind?
        if let call = info?.syscall.blockedSyscall {
            syscall = call.number
            if fdFirstSyscalls.contains(call.number), let fd = call.arguments.first, fd < UInt64(Int32.max) {
                fdKind = (try? FileDescriptorKind.describe(fd: Int32(fd))).map(Self.kind)
            }
        }
        let readAt = MonotonicClock.now()
        let cpuNow = (try? ThreadCPUClock(thread).elapsed()) ?? .zero
        let waitNow = try? ThreadInfo.schedStat(thread).waitTime
        let wallDelta = baseline.map { readAt - $0.takenAt } ?? .zero
        let cpuDelta = baseline.map { cpuNow - $0.cpuTime } ?? .zero
        var waitDelta: Duration?
        if let b = baseline?.runQueueWait, let w = waitNow { waitDelta = w - b }
        let cores = max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1)
        var evidence = ThreadEvidence(state: state, syscall: syscall, fdKind: fdKind, cpuTimeDelta: cpuDelta,
                                      wallDelta: wallDelta, runQueueWaitDelta: waitDelta, threadCount: threadCount,
                                      cores: cores)
        if evidence.looksStarved() {
            // Only then: reading every thread's state costs a few microseconds per thread.
            evidence.runnableThreadCount = runnableThreads(listingInto: &threads)
        }
        return (evidence, info)
    }

    /// Threads of this process in state R now. Listed into `tids`, whose storage is kept: a
    /// starved-looking stall asks every round (issue 19).
    private static func runnableThreads(listingInto tids: inout [ThreadID]) -> Int? {
        do { try ThreadList.current(into: &tids) } catch { return nil }
        var stat = sw_thread_stat_t()
        return tids.reduce(0) { count, tid in
            sw_thread_stat(tid.rawValue, &stat) == 0 && stat.state == CChar(UInt8(ascii: "R")) ? count + 1 : count
        }
    }

    static func kind(_ k: FileDescriptorKind) -> FDKind {
        switch k {
        case .socket: .socket
        case .pipe: .pipe
        case .file: .file
        case .eventfd: .eventfd
        case .epoll: .epoll
        case .timerfd: .timerfd
        case .other, .closed: .other
        }
    }
}
