#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import StallwatchReport
import Synchronization

/// The number of online CPUs, read at most once every 10 s: glibc's `sysconf(_SC_NPROCESSORS_ONLN)`
/// opens and parses `/sys/devices/system/cpu/online` on every call, and the watchdog asks in every
/// round (an open, a read and a close each time: a fifth of an idle round's CPU while it was read
/// once a second, since idle rounds come 1.8 s apart). CPUs going on or off line is rare; 10 s of
/// delay in noticing it changes no verdict.
enum OnlineCPUs {
    private static let cached = Atomic<Int>(0)
    private static let readAt = Atomic<UInt64>(0)

    /// At least 1.
    static var count: Int {
        let now = MonotonicClock.now().nanoseconds
        let value = cached.load(ordering: .relaxed)
        if value > 0, now &- readAt.load(ordering: .relaxed) < 10_000_000_000 { return value }
        let fresh = max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1)
        cached.store(fresh, ordering: .relaxed)
        readAt.store(now, ordering: .relaxed)
        return fresh
    }
}
