import StallwatchReport
/// Something worth reporting about CPU usage.
package enum CPUEvent: Sendable, Equatable {
    /// Process CPU went above the high fraction of all cores; `usage` is in cores (1.0 = one
    /// core) and `topThreads` the busiest threads above the per-thread minimum, busiest first.
    case processCPUHigh(usage: Double, topThreads: [ThreadCPUShare])
    /// Process CPU stayed above the sustained threshold for `duration`, averaging `average`
    /// cores.
    case sustainedHigh(average: Double, duration: Duration)
}

/// The result of feeding one reading to ``CPUPolicy``.
package struct CPUAssessment: Sendable, Equatable {
    /// Process usage in cores for this reading; `nil` when the reading was ignored.
    package var usage: Double?
    /// Events this reading triggered (possibly both kinds at once).
    package var events: [CPUEvent]

    /// Whether the reading was ignored (period ≤ 0 or too long).
    package var ignored: Bool { usage == nil }

    /// Creates an assessment.
    package init(usage: Double?, events: [CPUEvent]) {
        self.usage = usage
        self.events = events
    }
}
