import StallwatchReport
/// The outcome of ``StallFilter/evaluate(_:round:now:stackRequired:stackWhole:)``.
package enum FilterDecision: Equatable, Sendable {
    /// Write the report, attaching these counters.
    case report(ReportCounters)
    /// Do not write it, for this reason.
    case filtered(FilterReason)

    /// Whether a report should be written.
    package var shouldReport: Bool {
        if case .report = self { return true }
        return false
    }
}
