import CSampler
import Glibc

/// A thread's `/proc` `syscall` and `schedstat` files, kept open and re-read from their start: the
/// watchdog reads them for the same threads every few ms, and an open descriptor saves the path
/// lookup, the open and the close each time (one `pread` instead of three system calls).
/// A file that cannot be opened is read by path instead, so nothing is lost but the saving.
/// Not shared between threads (the watchdog's own).
package final class TaskFiles {
    private let tid: ThreadID
    private var syscallFD: Int32
    private var schedstatFD: Int32

    /// Opens the files of `tid` (a thread of this process).
    package init(_ tid: ThreadID) {
        self.tid = tid
        syscallFD = sw_task_file_open(tid.rawValue, "syscall")
        schedstatFD = sw_task_file_open(tid.rawValue, "schedstat")
    }

    deinit {
        if syscallFD >= 0 { close(syscallFD) }
        if schedstatFD >= 0 { close(schedstatFD) }
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
