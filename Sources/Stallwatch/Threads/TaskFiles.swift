import CSampler
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A thread's `/proc` `syscall` and `schedstat` files (and `stat`, opened on first use), kept open
/// and re-read from their start: the watchdog reads them for the same threads every few ms, and an
/// open descriptor saves the path lookup, the open and the close each time (one `pread` instead of
/// three system calls).
/// A file that cannot be opened is read by path instead, so nothing is lost but the saving.
/// Not shared between threads (the watchdog's own).
package final class TaskFiles {
    /// The thread whose files these are.
    package let tid: ThreadID
    private var syscallFD: Int32
    private var schedstatFD: Int32
    private var statFD: Int32?

    /// Opens the files of `tid` (a thread of this process).
    package init(_ tid: ThreadID) {
        self.tid = tid
        syscallFD = sw_task_file_open(tid.rawValue, "syscall")
        schedstatFD = sw_task_file_open(tid.rawValue, "schedstat")
    }

    deinit {
        if syscallFD >= 0 { close(syscallFD) }
        if schedstatFD >= 0 { close(schedstatFD) }
        if let statFD, statFD >= 0 { close(statFD) }
    }

    /// What `/proc/self/task/TID/stat` says now: 0, -ESRCH when the thread is gone, or -errno.
    package func stat(_ out: inout sw_thread_stat_t) -> Int32 {
        if statFD == nil { statFD = sw_task_file_open(tid.rawValue, "stat") }
        if let fd = statFD, fd >= 0 { return sw_thread_stat_fd(fd, tid.rawValue, &out) }
        return sw_thread_stat(tid.rawValue, &out)
    }

    /// What `/proc/self/task/TID/syscall` says now: 0, -ESRCH when the thread is gone, or -errno.
    package func syscall(_ out: inout sw_thread_syscall_t) -> Int32 {
        syscallFD >= 0 ? sw_thread_syscall_fd(syscallFD, &out) : sw_thread_syscall(tid.rawValue, &out)
    }

    /// What `/proc/self/task/TID/schedstat` says now (ns on a CPU, ns waiting for one, timeslices).
    package func schedstat(run: inout UInt64, wait: inout UInt64, timeslices: inout UInt64) -> Int32 {
        schedstatFD >= 0 ? sw_thread_schedstat_fd(schedstatFD, &run, &wait, &timeslices)
                         : sw_thread_schedstat(tid.rawValue, &run, &wait, &timeslices)
    }
}
