#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The clock `/proc/self/stat`'s start time counts in: time since boot, sleep included
/// (CLOCK_BOOTTIME, Linux only). Elsewhere there is no `/proc` start time to compare it with.
enum BootClock {
    /// Seconds since boot, or `nil` where this clock is not read.
    static func seconds() -> Double? {
#if os(Linux) && !STALLWATCH_PORTABLE_ONLY
        var ts = timespec()
        guard clock_gettime(CLOCK_BOOTTIME, &ts) == 0 else { return nil }
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
#else
        return nil
#endif
    }
}
