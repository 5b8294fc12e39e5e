import StallwatchReport
/// One stall: one job or loop tick holding one thread past the threshold, from its start until that
/// job stops running there. Owned by ``StallDetector``; one episode gets exactly one report (one
/// id), which later rounds update and the episode's end makes final.
package struct StallEpisode: Sendable, Equatable {
    /// When the job or tick began (the probe's stamp, or the instant measured from after a stop).
    package var start: MonotonicInstant
    /// Rounds in which it has been stalled: 1 in the round that found it.
    package var stalledRounds: Int
    /// Its report, once one was made: every later version keeps this id.
    package var report: StallReport?

    /// Creates an episode.
    package init(start: MonotonicInstant, stalledRounds: Int = 1, report: StallReport? = nil) {
        self.start = start
        self.stalledRounds = stalledRounds
        self.report = report
    }

    /// Versions of its report made so far (0 before the first): the next version's
    /// ``StallReport/sequenceInStall`` is this minus one.
    package var reportVersions: Int { report.map { $0.sequenceInStall + 1 } ?? 0 }

    /// How long it lasted if it ended at `end`, never negative.
    package func duration(endingAt end: MonotonicInstant) -> Duration {
        end > start ? end - start : .zero
    }
}
