/// Why a stall report was not written.
public enum FilterReason: Equatable, Sendable {
    /// The blamed stack, walked to the thread's first frame, has at most one frame: it says
    /// nothing about the cause. (A walk that stopped early is never trivial.)
    case trivialStack
    /// The same stack was reported recently; the next report may come at `nextAllowedRound`.
    case annealing(nextAllowedRound: Int)
    /// Over the rolling cap; `suppressedSoFar` counts all suppressions so far (none are lost).
    case rateLimited(suppressedSoFar: Int)
}

/// Counters that travel with a report so a reader knows what it did not see.
public struct ReportCounters: Equatable, Sendable, Codable {
    /// Stalls filtered (trivial stack or annealing) since the previous report.
    public var filteredSinceLastReport: Int
    /// Reports suppressed by the rate cap since the previous report.
    public var suppressedSinceLastReport: Int
    /// Reports suppressed by the rate cap since monitoring started.
    public var suppressedTotal: Int

    /// Creates counters.
    public init(filteredSinceLastReport: Int = 0, suppressedSinceLastReport: Int = 0, suppressedTotal: Int = 0) {
        self.filteredSinceLastReport = filteredSinceLastReport
        self.suppressedSinceLastReport = suppressedSinceLastReport
        self.suppressedTotal = suppressedTotal
    }
}

/// The outcome of ``StallFilter/evaluate(_:round:now:stackRequired:stackWhole:)``.
public enum FilterDecision: Equatable, Sendable {
    /// Write the report, attaching these counters.
    case report(ReportCounters)
    /// Do not write it, for this reason.
    case filtered(FilterReason)

    /// Whether a report should be written.
    public var shouldReport: Bool {
        if case .report = self { return true }
        return false
    }
}
