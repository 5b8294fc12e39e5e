import StallwatchPolicy

/// What the watchdog tells its listeners.
public enum WatchdogEvent: Sendable {
    /// A stall report, once per stall (`report.sequenceInStall == 0`). While the stall lasts its
    /// report file is rewritten under the same id; ``stallEnded(loop:thread:duration:)`` says when
    /// it ended, and the stored report is then final.
    case stall(StallReport)
    /// A reported stall is over: `duration` runs from the start of the stalled job or tick to its end.
    case stallEnded(loop: String, thread: ThreadID?, duration: Duration)
    /// A stall was noticed but not reported, and why (trivial stack, back-off, daily cap).
    case filtered(loop: String, reason: FilterReason)
    /// A key came round more often than its threshold within one busy period of a loop
    /// (see ``FeedbackCounter``): a loop that never settles, reported with the call that crossed it.
    case feedbackLoop(StallReport)
    /// A ping-probed loop busy for `busyLoopWindow` without stalling, the same stack recurring.
    case busyLoop(StallReport)
    /// The process uses much CPU (a `cpuHigh` or `cpuSustained` report).
    case cpu(StallReport)
    /// Something went wrong that the watchdog survived (e.g. the report directory is unwritable).
    /// The stall event itself was still delivered.
    case error(String)
}
