#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A thread's nice value. On Linux nice is per thread (`setpriority` on a thread id) and
/// `RLIMIT_NICE` says how far an unprivileged thread may lower it; glibc types both calls' first
/// argument as an enum of its own. Elsewhere (Darwin: `PRIO_PROCESS` names the whole process, and
/// there is no `RLIMIT_NICE`) no thread's nice value is changed.
package enum ThreadPriority {
    /// The nice value of thread `tid`, or `nil` when it cannot be read.
    package static func nice(thread tid: Int32) -> Int32? {
#if os(Linux) && !STALLWATCH_PORTABLE_ONLY
        errno = 0
        let current = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(tid))
        return errno == 0 ? current : nil
#else
        _ = tid
        return nil
#endif
    }

    /// Sets thread `tid`'s nice value; whether the system allowed it.
    @discardableResult
    package static func setNice(_ nice: Int32, thread tid: Int32) -> Bool {
#if os(Linux) && !STALLWATCH_PORTABLE_ONLY
        return setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(tid), nice) == 0
#else
        _ = (nice, tid)
        return false
#endif
    }

    /// The lowest nice value an unprivileged thread may take (RLIMIT_NICE: 20 - rlim_cur), or 20
    /// when the limit cannot be read.
    package static var unprivilegedFloor: Int32 {
#if os(Linux) && !STALLWATCH_PORTABLE_ONLY
        var limit = rlimit()
        return getrlimit(__rlimit_resource_t(__RLIMIT_NICE.rawValue), &limit) == 0
            ? 20 - Int32(clamping: limit.rlim_cur) : 20
#else
        return 20
#endif
    }
}
