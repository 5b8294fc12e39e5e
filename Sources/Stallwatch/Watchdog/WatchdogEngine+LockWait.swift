import StallwatchReport

/// The engine's side of a lock-waiting stall: find the lock's holder before the report is judged
/// (so a deadlock another report carries is not reported again), and take the holders' stacks
/// only for a report that is made.
extension WatchdogEngine {
    /// The stalled thread's futex wait, when its evidence says it waits in `futex`.
    func lockWaitFinding(_ m: LoopMonitor, thread: ThreadID?) -> LockWaitFinding? {
        guard let thread, m.evidence?.evidence.syscall == SyscallNumber.futex else { return nil }
        return LockWaitFinding.find(thread)
    }

    /// Whether `finding` is a deadlock another report already carries.
    func deadlockReported(_ finding: LockWaitFinding, now: MonotonicInstant) -> Bool {
        guard let key = finding.deadlockKey, let id = builder.deadlocks.reportID(of: key, now: now) else { return false }
        logger.debug("deadlock already reported", metadata: ["id": "\(id)"])
        return true
    }

    /// The lock's facts for a report whose cause is a lock wait, with `cause` said with them.
    func lockWaitFacts(_ finding: LockWaitFinding, cause: inout StallCause) -> LockWaitFacts? {
        guard cause.kind == .lockWait,
              let facts = builder.lockWaitFacts(finding, maySignal: maySignal,
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
