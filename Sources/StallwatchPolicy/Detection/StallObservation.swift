import StallwatchReport
/// What ``StallDetector`` concluded about one loop in one check round.
package enum StallObservation: Equatable, Sendable {
    /// The loop is waiting for work.
    case idle
    /// The loop is busy, but not for long enough to be interesting.
    case busy(elapsed: Duration)
    /// Busy beyond the suspicion fraction of the threshold: start sampling its stack now, so the
    /// ring already holds evidence if it becomes a stall.
    case suspected(elapsed: Duration)
    /// The first round in which this busy period exceeds the threshold. Emitted once per stall:
    /// this is the round that produces the stall's report.
    case stalled(since: MonotonicInstant, elapsed: Duration)
    /// A later round of a stall already reported by ``stalled(since:elapsed:)``; `round` is 2 for
    /// the second stalled round, and so on. Follow-up reports are up to ``StallFilter``.
    case stillStalled(since: MonotonicInstant, elapsed: Duration, round: Int)
    /// A reported stall is over. `duration` runs from its start to the end the probe recorded
    /// (`endedAt`), or else to the new busy stamp, or to this round's `now` when the loop went idle.
    /// The closed episode is then available once from ``StallDetector/takeEndedEpisode()``.
    case ended(duration: Duration)
    /// A busy period that crossed the threshold and ended between two rounds (the watchdog ran
    /// late, starved or held up): a stall all the same, reported once, after the fact, with the
    /// duration the probe recorded. The caller makes its report, then closes it with
    /// ``StallDetector/closeStallThatEnded(busySince:)``.
    case stalledAfterItEnded(since: MonotonicInstant, duration: Duration)
    /// This round came so long after the previous one that the process must have been stopped;
    /// any busy period was re-based to now and nothing is reported for the time spent stopped.
    case resumedAfterSuspension

    /// Whether the loop's stack should be sampled after this round: always while suspected or
    /// stalled, and for every busy or idle round too when sampling continuously.
    package func wantsSampling(sampleContinuously: Bool) -> Bool {
        switch self {
        case .suspected, .stalled, .stillStalled:
            return true
        case .idle, .busy, .ended, .resumedAfterSuspension, .stalledAfterItEnded:
            return sampleContinuously
        }
    }
}
