// Thread facts read without signalling the thread: /proc/self/task, comm, stat, status, syscall, schedstat.
// None of these run in a signal handler. None allocates.
#ifndef SW_THREADS_H
#define SW_THREADS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The calling thread's kernel thread id. Async-signal-safe (a raw syscall).
int32_t sw_gettid(void);

/// The calling thread's kernel thread id, cached in a thread-local after the first call: a
/// couple of nanoseconds, for probes that run on every loop iteration. Async-signal-safe.
int32_t sw_current_tid(void);

/// Lists the threads of this process into `tids` (up to `cap`), through getdents64 on /proc/self/task.
/// `*count` receives how many threads exist (may exceed `cap`: then the list is truncated).
/// Returns 0 or -errno.
int sw_threads_list(int32_t *tids, size_t cap, size_t *count);

/// Opens /proc/self/task for sw_threads_list_fd. Returns the descriptor or -errno; the caller closes it.
int sw_task_dir_open(void);

/// sw_threads_list on a descriptor from sw_task_dir_open, listed again from its start each call.
int sw_threads_list_fd(int dirfd, int32_t *tids, size_t cap, size_t *count);

/// What /proc/self/task/<tid>/stat says about a thread.
typedef struct sw_thread_stat {
    int32_t tid;
    char name[16];          ///< comm, NUL-terminated
    char state;             ///< R, S, D, T, t, Z, X, I ...
    int32_t last_cpu;       ///< CPU the thread last ran on
    uint64_t utime_ticks;   ///< user time in clock ticks
    uint64_t stime_ticks;   ///< system time in clock ticks
    uint64_t minflt;
    uint64_t majflt;
    uint64_t start_ticks;   ///< when the thread started, clock ticks since boot
} sw_thread_stat_t;

/// Reads /proc/self/task/<tid>/stat. Returns 0, -ESRCH when the thread is gone, or -errno.
int sw_thread_stat(int32_t tid, sw_thread_stat_t *out);

/// Reads the SigBlk mask from /proc/self/task/<tid>/status (bit n-1 = signal n).
/// Returns 0, -ESRCH when the thread is gone, or -errno.
int sw_thread_sigblk(int32_t tid, uint64_t *mask);

/// Reads the SigPnd mask (signals sent to the thread itself and not yet delivered) from
/// /proc/self/task/<tid>/status. Returns 0, -ESRCH when the thread is gone, or -errno.
int sw_thread_sigpnd(int32_t tid, uint64_t *mask);

/// What /proc/self/task/<tid>/syscall says.
typedef struct sw_thread_syscall {
    int64_t nr;             ///< syscall number; -1 blocked outside a syscall; -2 running
    uint64_t args[6];
    uint64_t sp;            ///< user stack pointer (0 when running)
    uint64_t pc;            ///< user program counter (0 when running)
} sw_thread_syscall_t;

/// Reads /proc/self/task/<tid>/syscall. Returns 0, -ESRCH when the thread is gone, or -errno.
int sw_thread_syscall(int32_t tid, sw_thread_syscall_t *out);

/// Reads /proc/self/task/<tid>/schedstat: time on CPU, time waiting on a run queue (ns), timeslices.
int sw_thread_schedstat(int32_t tid, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *timeslices);

/// Opens /proc/self/task/<tid>/<leaf> read-only (close-on-exec) for the `_fd` readers below, which
/// re-read it without opening it again (a watcher that reads the same files every few ms saves
/// the path lookup, the open and the close). Returns the descriptor, -ESRCH when the thread is
/// gone, or -errno. The caller closes it.
int sw_task_file_open(int32_t tid, const char *leaf);

/// sw_thread_stat on a descriptor from sw_task_file_open(tid, "stat").
int sw_thread_stat_fd(int fd, int32_t tid, sw_thread_stat_t *out);

/// sw_thread_syscall on a descriptor from sw_task_file_open(tid, "syscall").
int sw_thread_syscall_fd(int fd, sw_thread_syscall_t *out);

/// sw_thread_schedstat on a descriptor from sw_task_file_open(tid, "schedstat").
int sw_thread_schedstat_fd(int fd, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *timeslices);

/// Describes a file descriptor of this process by readlink of /proc/self/fd/<fd>
/// ("socket:[123]", "pipe:[45]", "/var/log/x", "anon_inode:[eventfd]"). Returns the length or -errno.
int sw_fd_describe(int fd, char *buf, size_t cap);

/// Names the calling thread (comm, as `ps -L` and /proc show it); longer names are cut to 15 bytes
/// instead of failing. Returns 0 or -errno.
int sw_thread_set_name(const char *name);

/// Resident and virtual size of this process in bytes, from /proc/self/statm. Returns 0 or -errno.
int sw_process_memory(uint64_t *rss_bytes, uint64_t *vm_bytes);

#ifdef __cplusplus
}
#endif
#endif
