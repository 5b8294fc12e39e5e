/// Renders durations for evidence strings without Foundation's formatters (the policy module
/// stays dependency-free).
package enum DurationText {
    /// Milliseconds with one decimal, e.g. `"1950.0 ms"`; precise enough for stall evidence.
    package static func milliseconds(_ duration: Duration) -> String {
        let tenthsOfMillisecond = duration.clampedNanoseconds / 100_000
        let sign = tenthsOfMillisecond < 0 ? "-" : ""
        let magnitude = tenthsOfMillisecond.magnitude
        return "\(sign)\(magnitude / 10).\(magnitude % 10) ms"
    }

    /// A whole percentage, e.g. `"97 %"`.
    package static func percent(_ fraction: Double) -> String {
        guard fraction.isFinite else { return "? %" }
        return "\(Int((fraction * 100).rounded())) %"
    }
}
