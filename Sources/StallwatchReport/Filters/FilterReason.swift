/// Why a stall report was not written.
///
/// A struct, not an enum, so that a new reason is not a source break: compare ``kind`` with the
/// static kinds and keep a `default:` branch.
public struct FilterReason: Hashable, Sendable, CustomStringConvertible {
    /// What kind of filter held the report back.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's stable name, as in metrics labels and logs (`trivial_stack`).
        public let name: String
        init(_ name: String) { self.name = name }

        /// The blamed stack, walked to the thread's first frame, has at most one frame: it says
        /// nothing about the cause. (A walk that stopped early is never trivial.)
        public static let trivialStack = Kind("trivial_stack")
        /// The same stack was reported recently (Fibonacci back-off).
        public static let annealing = Kind("annealing")
        /// Over the rolling cap of reports.
        public static let rateLimited = Kind("rate_limited")

        public var description: String { name }
    }

    /// What kind of filter held the report back.
    public let kind: Kind
    /// For ``Kind/annealing``: the watchdog round from which the same stack may be reported again.
    public let nextAllowedRound: Int?
    /// For ``Kind/rateLimited``: every suppression so far (none are lost).
    public let suppressedSoFar: Int?

    init(kind: Kind, nextAllowedRound: Int? = nil, suppressedSoFar: Int? = nil) {
        self.kind = kind
        self.nextAllowedRound = nextAllowedRound
        self.suppressedSoFar = suppressedSoFar
    }

    /// The blamed stack is trivial (see ``Kind/trivialStack``).
    public static let trivialStack = FilterReason(kind: .trivialStack)
    /// The same stack was reported recently; the next report may come at `nextAllowedRound`.
    public static func annealing(nextAllowedRound: Int) -> FilterReason {
        FilterReason(kind: .annealing, nextAllowedRound: nextAllowedRound)
    }
    /// Over the rolling cap; `suppressedSoFar` counts all suppressions so far.
    public static func rateLimited(suppressedSoFar: Int) -> FilterReason {
        FilterReason(kind: .rateLimited, suppressedSoFar: suppressedSoFar)
    }

    public var description: String {
        if let n = nextAllowedRound { return "\(kind.name) (next allowed round \(n))" }
        if let n = suppressedSoFar { return "\(kind.name) (\(n) suppressed so far)" }
        return kind.name
    }
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
