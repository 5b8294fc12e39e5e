import CSampler
import Glibc
import Logging

/// Gives the watchdog thread the best CPU priority it may take without asking for privileges, so
/// that busy loops on saturated CPUs delay it as little as possible (nice is per thread on Linux).
enum WatchdogPriority {
    /// The nice value asked for: favoured over ordinary threads, short of the extremes that
    /// would let a runaway watchdog starve the service.
    static let wanted: Int32 = -10

    /// Lowers the calling thread's nice value to ``wanted`` or to what RLIMIT_NICE allows; keeps the
    /// current value when neither is permitted (no CAP_SYS_NICE and a zero limit). Returns the
    /// nice value in force afterwards.
    @discardableResult
    static func raise(logger: Logger) -> Int32 {
        let tid = id_t(sw_current_tid())
        errno = 0
        let current = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), tid)
        guard errno == 0 else { return 0 }
        var limit = rlimit()
        // RLIMIT_NICE: an unprivileged thread may go down to 20 - rlim_cur.
        let floor = getrlimit(__rlimit_resource_t(__RLIMIT_NICE.rawValue), &limit) == 0
            ? 20 - Int32(clamping: limit.rlim_cur) : 20
        for candidate in [wanted, max(wanted, floor)] where candidate < current {
            if setpriority(__priority_which_t(PRIO_PROCESS.rawValue), tid, candidate) == 0 {
                logger.debug("watchdog thread priority raised", metadata: ["nice": "\(candidate)"])
                return candidate
            }
        }
        logger.debug("watchdog thread keeps its priority (no CAP_SYS_NICE, RLIMIT_NICE too low)",
                     metadata: ["nice": "\(current)"])
        return current
    }
}
