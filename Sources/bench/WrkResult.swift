import Foundation

/// What one `wrk --latency` run printed: throughput and latency percentiles.
struct WrkResult: Codable {
    var requestsPerSecond: Double
    var latencyP50Milliseconds: Double
    var latencyP99Milliseconds: Double
    var requests: Int
    /// Socket errors and non-2xx/3xx responses, as wrk counts them.
    var errors: Int

    /// Parses wrk's report; nil when the figures are missing (wrk failed).
    init?(output: String) {
        var rps: Double?, p50: Double?, p99: Double?, requests = 0, errors = 0
        for raw in output.split(separator: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            if line.hasPrefix("Requests/sec:"), fields.count >= 2 { rps = Double(fields[1]) }
            if fields.count == 2, fields[0] == "50%" { p50 = Self.milliseconds(fields[1]) }
            if fields.count == 2, fields[0] == "99%" { p99 = Self.milliseconds(fields[1]) }
            if fields.count >= 3, fields[1] == "requests", fields[2] == "in" { requests = Int(fields[0]) ?? 0 }
            if line.hasPrefix("Socket errors:") || line.hasPrefix("Non-2xx or 3xx responses:") {
                errors += fields.compactMap { Int($0.trimmingCharacters(in: CharacterSet(charactersIn: ","))) }.reduce(0, +)
            }
        }
        guard let rps, let p50, let p99 else { return nil }
        (requestsPerSecond, latencyP50Milliseconds, latencyP99Milliseconds) = (rps, p50, p99)
        (self.requests, self.errors) = (requests, errors)
    }

    /// "812.00us", "1.23ms", "2.01s" in milliseconds.
    static func milliseconds(_ text: String) -> Double? {
        for (suffix, scale) in [("us", 0.001), ("ms", 1.0), ("s", 1000.0)] where text.hasSuffix(suffix) {
            return Double(text.dropLast(suffix.count)).map { $0 * scale }
        }
        return nil
    }
}
