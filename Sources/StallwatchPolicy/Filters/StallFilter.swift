import StallwatchReport
/// matrix's report filters, applied in matrix's order: trivial stack, annealing, rate cap.
/// Keep one per monitored loop (annealing is per loop); share nothing else.
package struct StallFilter: Sendable {
    private var annealing = AnnealingSchedule()
    private var limiter: RollingReportLimiter
    private var filteredSinceLastReport = 0

    /// Creates a filter from a (validated) configuration.
    package init(configuration: WatchdogConfiguration) {
        limiter = RollingReportLimiter(capacity: configuration.reportCapPerWindow, window: configuration.reportWindow)
    }

    /// Reports suppressed by the rate cap since monitoring started.
    package var suppressedTotal: Int { limiter.suppressedTotal }

    /// Decides whether a stall whose blamed path is `signature` may be reported in check
    /// `round` at `now`. With `stackRequired` false (no stack could be taken at all, e.g. the
    /// sampling signal was taken over), a stall without a stack is still reported: its cause and
    /// duration are evidence enough, and silence would hide it. With `stackWhole` false (a walk
    /// stopped before the thread's first frame: code without unwind information, a bad link), a
    /// short stack says nothing about the stall and it is reported with what is known: only a
    /// stack walked to its root can be trivial.
    package mutating func evaluate(_ signature: StackSignature, round: Int, now: MonotonicInstant,
                                  stackRequired: Bool = true, stackWhole: Bool = true) -> FilterDecision {
        guard signature.depth > 1 || !stackRequired || !stackWhole else {
            filteredSinceLastReport += 1
            return .filtered(.trivialStack)
        }
        if case .wait(let next) = annealing.admit(signature, round: round) {
            filteredSinceLastReport += 1
            return .filtered(.annealing(nextAllowedRound: next))
        }
        // Annealing advanced even if the cap now suppresses the report, so the suppressed count
        // reflects reports that would have been written, not one per round.
        switch limiter.admit(at: now) {
        case .suppressed(let soFar):
            return .filtered(.rateLimited(suppressedSoFar: soFar))
        case .admitted(let suppressedBefore):
            defer { filteredSinceLastReport = 0 }
            return .report(ReportCounters(
                filteredSinceLastReport: filteredSinceLastReport,
                suppressedSinceLastReport: suppressedBefore,
                suppressedTotal: limiter.suppressedTotal))
        }
    }

    /// The stall ended (or the process resumed from a stop): the next stall of the same stack
    /// is reported at once.
    package mutating func stallEnded() {
        annealing.reset()
    }
}
