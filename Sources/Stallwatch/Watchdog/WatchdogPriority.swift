import CSampler
import Logging

/// Gives the watchdog thread the best CPU priority it may take without asking for privileges, so
/// that busy loops on saturated CPUs delay it as little as possible (nice is per thread on Linux;
/// where it is not, ``ThreadPriority`` changes nothing and the thread keeps its priority).
enum WatchdogPriority {
    /// The nice value asked for: favoured over ordinary threads, short of the extremes that
    /// would let a runaway watchdog starve the service.
    static let wanted: Int32 = -10

    /// Lowers the calling thread's nice value to ``wanted`` or to what RLIMIT_NICE allows; keeps the
    /// current value when neither is permitted (no CAP_SYS_NICE and a zero limit). Returns the
    /// nice value in force afterwards.
    @discardableResult
    static func raise(logger: Logger) -> Int32 {
        let tid = sw_current_tid()
        guard let current = ThreadPriority.nice(thread: tid) else { return 0 }
        let floor = ThreadPriority.unprivilegedFloor
        for candidate in [wanted, max(wanted, floor)] where candidate < current {
            if ThreadPriority.setNice(candidate, thread: tid) {
                logger.debug("watchdog thread priority raised", metadata: ["nice": "\(candidate)"])
                return candidate
            }
        }
        logger.debug("watchdog thread keeps its priority (no CAP_SYS_NICE, RLIMIT_NICE too low)",
                     metadata: ["nice": "\(current)"])
        return current
    }
}
