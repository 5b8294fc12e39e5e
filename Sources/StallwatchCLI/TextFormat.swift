import Foundation

/// How the commands print times and durations.
enum TextFormat {
    /// `"1552.5 ms"`.
    static func milliseconds(_ nanoseconds: Int64) -> String {
        String(format: "%.1f ms", Double(nanoseconds) / 1e6)
    }

    /// ISO 8601, UTC, to the millisecond.
    static func time(unixNanoseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(unixNanoseconds) / 1e9))
    }
}
