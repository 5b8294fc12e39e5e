import CSampler
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import StallwatchPolicy
import StallwatchReport

/// CPU, run-queue and wall time of a thread at one moment, to compare with later.
struct ThreadBaseline {
    var thread: ThreadID
    var stamp: MonotonicInstant        // the busy stamp this baseline belongs to
    var takenAt: MonotonicInstant
    var cpuTime: Duration
    var runQueueWait: Duration?
    /// The process's cgroup's CPU-quota throttling so far, when it has a quota to read: read once
    /// the loop is suspected, not at every busy period the watchdog sees (a file read each, on
    /// cgroup v2 machines), so the throttling counted is from then on, a part of the window.
    var throttled: Duration?
    /// The thread's storage bytes so far (``ThreadStorageIO``), read with ``throttled``.
    var storageBytes: UInt64?
    /// Why ``storageBytes`` could not be read, when it was tried.
    var storageUnread: String?
    /// Whether ``throttled`` and ``storageBytes`` were read (either may be `nil` after).
    private(set) var suspectedReadsTaken = false

    /// Reads what only a suspected loop's evidence weighs, once per busy period.
    mutating func readOnceSuspected() {
        guard !suspectedReadsTaken else { return }
        suspectedReadsTaken = true
        throttled = CgroupThrottling.total()
        switch ThreadStorageIO.read(thread) {
        case .success(let bytes): storageBytes = bytes
        case .failure(let unread): storageUnread = unread.reason
        }
    }

    /// `files`: the thread's `/proc` files when they are kept open already.
    static func take(_ thread: ThreadID, files: TaskFiles?, stamp: MonotonicInstant, now: MonotonicInstant) -> ThreadBaseline? {
        // Wall and CPU time are read together: deltas against the round's `now` would not match.
        let at = MonotonicClock.now()
        guard let cpu = try? ThreadCPUClock(thread).elapsed() else { return nil }
        let wait = try? (files.map { try ThreadInfo.schedStat($0) } ?? ThreadInfo.schedStat(thread)).waitTime
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

    /// `runnableThreads`: the process's threads in state R, asked for only when the thread looks
    /// starved (reading every thread's state costs a few microseconds per thread), as are the
    /// machine's runnable tasks and the cgroup's throttling: what the classifier weighs its CPU
    /// against.
    /// `files`: the stalled thread's `/proc` files, kept open while it is watched.
    static func gather(files: TaskFiles, baseline: ThreadBaseline?, now: MonotonicInstant,
                       threadCount: Int, runnableThreads: () -> Int?) -> (evidence: ThreadEvidence, info: StalledThreadRead?) {
        let thread = files.tid
        var info = StalledThreadRead.read(files)
        // Read as it woke: once more, so that a stall's last evidence is not a torn read.
        if info?.isTorn == true { info = StalledThreadRead.read(files) }
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
        let waitNow = try? ThreadInfo.schedStat(files).waitTime
        let wallDelta = baseline.map { readAt - $0.takenAt } ?? .zero
        let cpuDelta = baseline.map { cpuNow - $0.cpuTime } ?? .zero
        var waitDelta: Duration?
        if let b = baseline?.runQueueWait, let w = waitNow { waitDelta = w - b }
        let cores = OnlineCPUs.count
        var evidence = ThreadEvidence(state: state, syscall: syscall, fdKind: fdKind, cpuTimeDelta: cpuDelta,
                                      wallDelta: wallDelta, runQueueWaitDelta: waitDelta, threadCount: threadCount,
                                      cores: cores)
        // Only a runnable thread's cause weighs it: a blocked one names its call.
        if state == "R", let baseline, baseline.suspectedReadsTaken {
            if let why = baseline.storageUnread {
                evidence.storageBytesUnread = why
            } else if let before = baseline.storageBytes {
                switch ThreadStorageIO.read(thread) {
                case .success(let now) where now >= before: evidence.storageBytesDelta = now - before
                case .success: break   // the counter went back: a reused thread id
                case .failure(let unread): evidence.storageBytesUnread = unread.reason
                }
            }
        }
        if evidence.looksStarved() {
            evidence.runnableThreadCount = runnableThreads()
            switch MachineRunnable.read() {
            case .success(let count): evidence.machineRunnable = count
            case .failure(let unread): evidence.machineRunnableUnread = unread.reason
            }
            if let before = baseline?.throttled, let now = CgroupThrottling.total() { evidence.throttledDelta = now - before }
        }
        return (evidence, info)
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

/// What a stall's evidence reads of the stalled thread each round, through its kept files: `stat`
/// and `syscall`. Not `status`, as ``ThreadInfo`` does: no evidence uses the signal mask, and with
/// 64 loops stalled at once rendering `status` was the largest part of the watchdog's work.
struct StalledThreadRead {
    var name: String
    var state: ThreadState
    var lastCPU: Int
    var syscall: SyscallState

    /// Whether the two files disagree: `stat` said asleep, then `syscall` said running. The thread
    /// woke between the reads (a lock-waiting loop as its lock came free, at the stall's last
    /// round), and neither says where it waited: taken as evidence, the stall's cause became
    /// `unknown` ("state S, no syscall known").
    var isTorn: Bool {
        guard case .running = syscall else { return false }
        return state.procLetter == "S" || state.procLetter == "D"
    }

    /// The NUMA node of the CPU the thread last ran on.
    var numaNode: Int? { NUMATopology.node(ofCPU: lastCPU) }

    /// `nil` when a file cannot be read (the thread is gone).
    static func read(_ files: TaskFiles) -> StalledThreadRead? {
        var stat = sw_thread_stat_t()
        guard files.stat(&stat) == 0 else { return nil }
        var call = sw_thread_syscall_t()
        guard files.syscall(&call) == 0 else { return nil }
        return StalledThreadRead(name: ThreadInfo.name(in: stat), state: ThreadInfo.state(in: stat),
                                 lastCPU: Int(stat.last_cpu), syscall: SyscallState(call))
    }
}
