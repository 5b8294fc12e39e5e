import Glibc
import StallwatchPolicy
import StallwatchReport

/// The monotonic clock the probes and the watchdog share (CLOCK_MONOTONIC, vDSO: no system call).
enum MonotonicClock {
    @inline(__always)
    static func nowNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

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

    static func now() -> MonotonicInstant { MonotonicInstant(nanoseconds: nowNanoseconds()) }

    /// Wall-clock nanoseconds since the Unix epoch, for report start times.
    static func unixNanoseconds(ofMonotonic instant: MonotonicInstant) -> Int64 {
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let wallNow = Int64(wall.tv_sec) * 1_000_000_000 + Int64(wall.tv_nsec)
        let monoNow = Int64(clamping: nowNanoseconds())
        return wallNow - (monoNow - Int64(clamping: instant.nanoseconds))
    }
}
