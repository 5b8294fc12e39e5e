/// When a failed export is tried again: pure. OTLP/HTTP's rules: 429, 502, 503 and 504 are worth
/// another try (a receiver that is shedding load or restarting), as are a refused connection and a
/// timeout; any other answer is final. The wait doubles from 1 s, with ±20 % jitter so replicas
/// that failed together do not retry together, and a `Retry-After` the receiver sent is waited out.
enum ExportRetry {
    /// Whether an HTTP status is worth another try.
    static func isRetryable(status: Int) -> Bool { [429, 502, 503, 504].contains(status) }

    /// The wait before try `attempt + 1` after `attempt` failed ones (1 = the first failed):
    /// `retryAfter` when the receiver asked for it, else 1 s doubled per failed try; `jitter` in
    /// -1...1 moves the latter by up to 20 %; both cut to `longest`.
    static func delay(afterAttempt attempt: Int, retryAfter: Duration?, jitter: Double, longest: Duration) -> Duration {
        if let retryAfter { return min(max(retryAfter, .zero), longest) }
        let exponent = min(max(attempt - 1, 0), 20)
        let base = Duration.seconds(1) * (1 << exponent)
        return min(base * (1 + 0.2 * min(max(jitter, -1), 1)), longest)
    }

    /// A `Retry-After` value as a wait: delay-seconds (`120`) or an IMF-fixdate
    /// (`Sun, 06 Nov 1994 08:49:37 GMT`) against `nowUnixSeconds`; `nil` when it is neither.
    static func retryAfter(_ value: String, nowUnixSeconds: Int64) -> Duration? {
        let text = value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        if let seconds = Int64(text) { return seconds >= 0 ? .seconds(seconds) : nil }
        guard let at = imfFixdate(text) else { return nil }
        return .seconds(max(at - nowUnixSeconds, 0))
    }

    /// Seconds since the epoch of an IMF-fixdate, `nil` if `text` is not one.
    static func imfFixdate(_ text: String) -> Int64? {
        // "Sun, 06 Nov 1994 08:49:37 GMT"
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[0].hasSuffix(","), parts[5] == "GMT",
              let day = Int(parts[1]), (1...31).contains(day),
              let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
                .firstIndex(of: String(parts[2])),
              let year = Int(parts[3]), year >= 1970 else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let h = Int(clock[0]), let m = Int(clock[1]), let s = Int(clock[2]),
              (0..<24).contains(h), (0..<60).contains(m), (0...60).contains(s) else { return nil }
        return Int64(daysFromCivil(year: year, month: month + 1, day: day)) * 86_400 + Int64(h * 3600 + m * 60 + s)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
