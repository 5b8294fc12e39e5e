#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension MonotonicClock {
#if os(Linux) && !STALLWATCH_PORTABLE_ONLY
    /// CLOCK_MONOTONIC_COARSE: the time of the last kernel tick (a few ns to read instead of ~20).
    /// Never ahead of CLOCK_MONOTONIC and at most one tick (4 ms at HZ=250) behind it; readers add
    /// one tick (``coarseResolution``) so a stall is never reported before its threshold has passed.
    @inline(__always)
    static func coarseNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    /// The coarse clock's resolution (one kernel tick), read once.
    static let coarseResolution: UInt64 = {
        var ts = timespec()
        clock_getres(CLOCK_MONOTONIC_COARSE, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }()
#else
    /// No coarse clock outside Linux: the monotonic clock itself, exact, so nothing is added back.
    @inline(__always)
    static func coarseNanoseconds() -> UInt64 { nowNanoseconds() }

    /// Exact readings: no tick to add back.
    static let coarseResolution: UInt64 = 0
#endif
}
