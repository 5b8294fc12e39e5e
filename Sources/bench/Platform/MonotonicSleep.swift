#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Sleeps to a deadline on the monotonic clock (``Workload/now()``). Linux sleeps to the deadline
/// itself (`clock_nanosleep` with `TIMER_ABSTIME`), so a late wake-up never shifts the next one;
/// Darwin has no `clock_nanosleep`, and sleeps for what is left of the interval instead.
enum MonotonicSleep {
    /// Sleeps until the monotonic clock reads `deadline` nanoseconds; `false` when a signal cut
    /// the sleep short (the caller sleeps again or gives up).
    static func until(_ deadline: Int) -> Bool {
#if os(Linux)
        var ts = timespec(tv_sec: deadline / 1_000_000_000, tv_nsec: deadline % 1_000_000_000)
        return clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) != EINTR
#else
        let left = deadline - Workload.now()
        guard left > 0 else { return true }
        var ts = timespec(tv_sec: left / 1_000_000_000, tv_nsec: left % 1_000_000_000)
        return nanosleep(&ts, nil) == 0 || errno != EINTR
#endif
    }
}
