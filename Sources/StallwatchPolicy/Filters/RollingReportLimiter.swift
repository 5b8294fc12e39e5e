import StallwatchReport
/// At most `capacity` reports in any rolling `window`; the rest are suppressed and counted.
///
/// Rolling rather than matrix's daily counter, which resets only at launch and so, in a
/// long-lived service, never resets at all.
package struct RollingReportLimiter: Sendable, Equatable {
    /// The outcome of ``admit(at:)``.
    package enum Verdict: Equatable, Sendable {
        /// Report; `suppressedBefore` reports were suppressed since the previous admitted one.
        case admitted(suppressedBefore: Int)
        /// Over the cap; `suppressedSoFar` counts every suppression since the limiter started.
        case suppressed(suppressedSoFar: Int)
    }

    /// Reports allowed per window.
    package let capacity: Int
    /// The window's length.
    package let window: Duration
    /// Reports suppressed since the limiter was created.
    package private(set) var suppressedTotal = 0
    /// Reports suppressed since the last admitted one.
    package private(set) var suppressedSinceLastAdmitted = 0
    // Instants of admitted reports still inside the window, oldest first.
    private var admitted: [MonotonicInstant] = []

    /// Creates a limiter allowing `capacity` reports per `window`.
    package init(capacity: Int, window: Duration) {
        self.capacity = capacity
        self.window = window
    }

    /// Admits or suppresses a report at `now`.
    package mutating func admit(at now: MonotonicInstant) -> Verdict {
        // A report exactly one window old no longer counts.
        admitted.removeAll { now - $0 >= window }
        guard admitted.count < capacity else {
            suppressedTotal += 1
            suppressedSinceLastAdmitted += 1
            return .suppressed(suppressedSoFar: suppressedTotal)
        }
        admitted.append(now)
        defer { suppressedSinceLastAdmitted = 0 }
        return .admitted(suppressedBefore: suppressedSinceLastAdmitted)
    }
}
