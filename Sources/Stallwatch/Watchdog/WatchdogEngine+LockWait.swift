import StallwatchReport

/// The engine's side of a lock-waiting stall: find the lock's holder before the report is judged
/// (so a deadlock another report carries is not reported again), and take the holders' stacks
/// only for a report that is made.
extension WatchdogEngine {
    /// The stalled thread's futex wait, when its evidence says it waits in `futex`.
    func lockWaitFinding(_ m: LoopMonitor, thread: ThreadID?) -> LockWaitFinding? {
        guard let thread, m.evidence?.evidence.syscall == SyscallNumber.futex else { return nil }
        // A wait that cannot be read again is said, not dropped.
        return LockWaitFinding.find(thread)
            ?? LockWaitFinding(hops: [], cycle: false,
                               unreadAddress: m.evidence?.info?.syscall.blockedSyscall?.arguments.first ?? 0)
    }

    /// Whether this stall belongs to a deadlock another report already carries: its cycle is
    /// reported, or its busy period was left to that report in an earlier round.
    func deadlockReported(_ finding: LockWaitFinding?, thread: ThreadID?, stamp: MonotonicInstant?, now: MonotonicInstant) -> Bool {
        guard let thread, let stamp else { return false }
        if builder.deadlocks.isQuiet(thread, busySince: stamp, now: now) { return true }
        guard let key = finding?.deadlockKey, let id = builder.deadlocks.reportID(of: key, now: now) else { return false }
        builder.deadlocks.keepQuiet(thread, busySince: stamp, now: now)
        logger.debug("deadlock already reported", metadata: ["id": "\(id)", "thread": "\(thread)"])
        return true
    }

    /// The lock's facts for a report whose cause is a lock wait, with `cause` said with them.
    func lockWaitFacts(_ finding: LockWaitFinding, cause: inout StallCause) -> LockWaitFacts? {
        guard cause.kind == .lockWait,
              let facts = gatherer.lockWaitFacts(finding, maySignal: maySignal,
                                                deadline: MonotonicClock.now() + Self.holderCaptureTime) else { return nil }
        cause = ReportBuilder.cause(cause, with: facts)
        return facts
    }

    func noteDeadlock(_ finding: LockWaitFinding, _ facts: LockWaitFacts, reportID: String, now: MonotonicInstant) {
        guard facts.deadlock, let key = finding.deadlockKey else { return }
        builder.deadlocks.record(key, reportID: reportID, now: now)
    }

    /// How long the holders' captures may take in all (a running holder answers a signal only
    /// when it gets a CPU).
    static let holderCaptureTime = Duration.milliseconds(40)
}
