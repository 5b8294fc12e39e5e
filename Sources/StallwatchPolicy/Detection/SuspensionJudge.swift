import StallwatchReport
/// Tells a process that was stopped (SIGSTOP, a debugger, a paused VM) from a watchdog that woke
/// late because the CPUs were busy, by evidence rather than by a fixed time limit.
///
/// The watchdog thread planned to wake at some instant and woke `lateness` after it. From then on it
/// was either runnable and waiting for a CPU (its run-queue wait in `schedstat` grows), or running
/// (its CPU time grows). A stopped thread does neither: time late that neither figure explains is
/// time the process was stopped. Pure: figures in, a duration out.
package struct SuspensionJudge: Sendable, Equatable {
    /// Unexplained lateness below this is noise (timer slack, a page fault), not a stop.
    package var minimumStop: Duration

    /// Creates a judge.
    package init(minimumStop: Duration = .milliseconds(20)) {
        self.minimumStop = minimumStop
    }

    /// How long the process was stopped while the watchdog waited.
    ///
    /// - Parameters:
    ///   - lateness: how long after its planned instant the watchdog woke (zero or more).
    ///   - runQueueWait: the watchdog thread's run-queue wait gained over its wait, `nil` if unknown.
    ///   - cpuTime: the watchdog thread's CPU time gained over its wait.
    /// - Returns: the stopped time, `.zero` when the lateness is explained (starved, or not late),
    ///   or `nil` when there is no run-queue evidence to judge by.
    package func stoppedTime(lateness: Duration, runQueueWait: Duration?, cpuTime: Duration) -> Duration? {
        guard lateness > minimumStop else { return .zero }
        guard let runQueueWait else { return nil }
        let unexplained = lateness - max(runQueueWait, .zero) - max(cpuTime, .zero)
        // Mostly explained by waiting for a CPU: a starved watchdog, whose loops did stall.
        guard unexplained > minimumStop, unexplained * 2 > lateness else { return .zero }
        return unexplained
    }
}
