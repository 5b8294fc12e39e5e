/// A point on the watchdog's monotonic clock, in nanoseconds since an arbitrary origin.
///
/// The policy never reads a clock: the watchdog reads `CLOCK_MONOTONIC` and passes instants in,
/// so every decision can be replayed in a test with made-up numbers.
public struct MonotonicInstant: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Nanoseconds since the clock's (arbitrary) origin.
    public var nanoseconds: UInt64

    /// Wraps a raw nanosecond reading.
    public init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// Orders instants by their nanosecond value.
    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }

    /// The instant `rhs` later (or earlier, if negative); saturates at the ends of the clock
    /// rather than trapping, because a watchdog must not crash the service it watches.
    public static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
        let delta = rhs.clampedNanoseconds
        if delta >= 0 {
            let (sum, overflow) = lhs.nanoseconds.addingReportingOverflow(UInt64(delta))
            return MonotonicInstant(nanoseconds: overflow ? .max : sum)
        }
        let magnitude = delta.magnitude
        return MonotonicInstant(nanoseconds: lhs.nanoseconds > magnitude ? lhs.nanoseconds - magnitude : 0)
    }

    /// The instant `rhs` earlier (saturating, like `+`).
    public static func - (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
        lhs + (.zero - rhs)
    }

    /// The signed time from `rhs` to `lhs`; negative when `lhs` is earlier.
    public static func - (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Duration {
        if lhs.nanoseconds >= rhs.nanoseconds {
            return .nanoseconds(lhs.nanoseconds - rhs.nanoseconds)
        }
        return .zero - .nanoseconds(rhs.nanoseconds - lhs.nanoseconds)
    }

    /// Encodes as a bare integer so reports stay readable.
    public init(from decoder: any Decoder) throws {
        nanoseconds = try decoder.singleValueContainer().decode(UInt64.self)
    }

    /// Encodes as a bare integer so reports stay readable.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(nanoseconds)
    }

    /// `"<n> ns"`, for test failure messages.
    public var description: String { "\(nanoseconds) ns" }
}
