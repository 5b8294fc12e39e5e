#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import StallwatchPolicy
import StallwatchReport

/// The monotonic clock the probes and the watchdog share (CLOCK_MONOTONIC, vDSO: no system call).
/// Its coarse reading, which differs by platform, is in `Platform/CoarseClock.swift`.
enum MonotonicClock {
    @inline(__always)
    static func nowNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

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
