// Thread facts from /proc/self/task without signalling the thread.
// No malloc and no stdio: everything goes through fixed stack buffers and raw open/read/close,
// so the watchdog can call these while other threads are parked or hold the allocator lock.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_threads.h"
#include "proc_parse.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// async-signal-safe: a raw syscall, no libc state (glibc's gettid() wrapper is only in newer glibc).
static _Thread_local int32_t t_cached_tid;

// The forking thread's cached id is its id in the parent: the child's only thread must look again.
static void forget_cached_tid_in_child(void) {
    t_cached_tid = 0;
}

__attribute__((constructor)) static void register_tid_fork_handler(void) {
    pthread_atfork(NULL, NULL, forget_cached_tid_in_child);
}

// async-signal-safe: a thread-local read, and gettid on the first call.
int32_t sw_current_tid(void) {
    int32_t tid = t_cached_tid;
    if (tid == 0) {
        tid = sw_gettid();
        t_cached_tid = tid;
    }
    return tid;
}

int32_t sw_gettid(void) {
    return (int32_t)syscall(SYS_gettid);
}

// ---- small helpers (all async-signal-safe: no locale, no allocation) ----

// Appends `s` to `buf` at `*len`; false when it would not fit with a NUL.
static bool append_str(char *buf, size_t cap, size_t *len, const char *s) {
    size_t n = strlen(s);
    if (*len + n + 1 > cap) return false;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
    return true;
}

static bool append_uint(char *buf, size_t cap, size_t *len, uint64_t v) {
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    if (*len + n + 1 > cap) return false;
    while (n > 0) buf[(*len)++] = digits[--n];
    buf[*len] = '\0';
    return true;
}

// "/proc/self/task/<tid>/<leaf>"; snprintf is avoided because it is not async-signal-safe.
static bool task_path(char *buf, size_t cap, int32_t tid, const char *leaf) {
    size_t len = 0;
    buf[0] = '\0';
    return append_str(buf, cap, &len, "/proc/self/task/") && append_uint(buf, cap, &len, (uint64_t)tid) &&
           append_str(buf, cap, &len, "/") && append_str(buf, cap, &len, leaf);
}

// A missing /proc file almost always means the thread exited between listing and reading;
// check the task directory so that a file the kernel simply lacks (e.g. schedstat without
// CONFIG_SCHED_INFO) is not misreported as a gone thread.
static int missing_file_error(int32_t tid) {
    char dir[64];
    struct stat st;
    if (task_path(dir, sizeof dir, tid, "") && stat(dir, &st) == 0) return -ENOENT;
    return -ESRCH;
}

// async-signal-safe: open only.
int sw_task_file_open(int32_t tid, const char *leaf) {
    if (tid <= 0 || leaf == NULL) return -EINVAL;
    char path[64];
    if (!task_path(path, sizeof path, tid, leaf)) return -ENAMETOOLONG;
    int fd;
    do {
        fd = open(path, O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        int e = errno;
        return e == ENOENT ? missing_file_error(tid) : (e == ESRCH ? -ESRCH : -e);
    }
    return fd;
}

// Reads up to cap-1 bytes of a /proc file and NUL-terminates. Returns the length or -errno
// (-ESRCH when the thread is gone). A partial read is fine: callers only need the head.
static int read_task_file(int32_t tid, const char *leaf, char *buf, size_t cap) {
    if (cap == 0) return -EINVAL;
    int fd = sw_task_file_open(tid, leaf);
    if (fd < 0) return fd;

    size_t len = 0;
    int result = 0;
    while (len < cap - 1) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n > 0) {
            len += (size_t)n;
        } else if (n == 0) {
            break;
        } else if (errno != EINTR) {
            // The thread can exit after open: the kernel then reports ESRCH (or ENOENT) on read.
            result = (errno == ENOENT || errno == ESRCH) ? -ESRCH : -errno;
            break;
        }
    }
    close(fd);  // not retried on EINTR: Linux has released the descriptor either way
    if (result < 0) return result;
    buf[len] = '\0';
    return (int)len;
}

// Lists the task directory open at `fd` from its start (lseek to 0 restarts a /proc directory).
static int list_task_dir(int fd, int32_t *tids, size_t cap, size_t *count) {
    if (lseek(fd, 0, SEEK_SET) != 0) return -errno;
    // Layout of the kernel's struct linux_dirent64; glibc's struct dirent64 is not guaranteed to match.
    struct dirent64_raw {
        uint64_t d_ino;
        int64_t d_off;
        unsigned short d_reclen;
        unsigned char d_type;
        char d_name[];
    };
    _Alignas(8) char buf[4096];
    size_t n_found = 0;
    int result = 0;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n == 0) break;
        if (n < 0) {
            if (errno == EINTR) continue;
            result = -errno;
            break;
        }
        for (long off = 0; off < n;) {
            const struct dirent64_raw *d = (const struct dirent64_raw *)(const void *)(buf + off);
            off += d->d_reclen;
            int64_t tid;
            const char *end = parse_int64(d->d_name, &tid);
            if (end == NULL || *end != '\0' || tid <= 0) continue;  // ".", ".."
            if (n_found < cap) tids[n_found] = (int32_t)tid;
            n_found++;
        }
        // procfs fills the buffer while entries fit: one that left room for a long entry was the
        // last (saves the call that would return 0).
        if ((size_t)n + 280 <= sizeof buf) break;
    }
    *count = n_found;
    return result;
}

int sw_task_dir_open(void) {
    int fd;
    do {
        fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

int sw_threads_list_fd(int dirfd, int32_t *tids, size_t cap, size_t *count) {
    if (dirfd < 0 || count == NULL || (tids == NULL && cap != 0)) return -EINVAL;
    return list_task_dir(dirfd, tids, cap, count);
}

int sw_threads_list(int32_t *tids, size_t cap, size_t *count) {
    if (count == NULL || (tids == NULL && cap != 0)) return -EINVAL;
    int fd = sw_task_dir_open();
    if (fd < 0) return fd;
    int result = list_task_dir(fd, tids, cap, count);
    close(fd);
    return result;
}

// async-signal-safe: open/read/close/stat and in-place parsing only.
int sw_thread_stat(int32_t tid, sw_thread_stat_t *out) {
    if (out == NULL) return -EINVAL;
    char buf[1024];
    int len = read_task_file(tid, "stat", buf, sizeof buf);
    if (len < 0) return len;
    return sw_parse_thread_stat(buf, tid, out);
}

// async-signal-safe: open/read/close/stat and in-place parsing only.
// One signal mask of the thread's `status` file, found by `parse`. The masks sit well before the
// long Cpus_allowed lists, so the head of the file suffices.
static int read_status_mask(int32_t tid, int (*parse)(const char *, uint64_t *), uint64_t *mask) {
    if (mask == NULL) return -EINVAL;
    char buf[4096];
    int len = read_task_file(tid, "status", buf, sizeof buf);
    if (len < 0) return len;
    return parse(buf, mask);
}

int sw_thread_sigblk(int32_t tid, uint64_t *mask) { return read_status_mask(tid, sw_parse_sigblk, mask); }

int sw_thread_sigpnd(int32_t tid, uint64_t *mask) { return read_status_mask(tid, sw_parse_sigpnd, mask); }

// async-signal-safe: open/read/close/stat and in-place parsing only.
int sw_thread_syscall(int32_t tid, sw_thread_syscall_t *out) {
    if (out == NULL) return -EINVAL;
    char buf[256];
    int len = read_task_file(tid, "syscall", buf, sizeof buf);
    if (len < 0) return len;
    return sw_parse_thread_syscall(buf, out);
}

// async-signal-safe: open/read/close/stat and in-place parsing only.
int sw_thread_schedstat(int32_t tid, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *timeslices) {
    if (run_ns == NULL || wait_ns == NULL || timeslices == NULL) return -EINVAL;
    char buf[128];
    int len = read_task_file(tid, "schedstat", buf, sizeof buf);
    if (len < 0) return len;
    return sw_parse_schedstat(buf, run_ns, wait_ns, timeslices);
}


// A /proc task file re-read from its start: the kernel generates it anew for a read at offset 0
// (seq_file), so one open descriptor serves every scan. Returns the length or -errno (-ESRCH once
// the thread is gone).
static int pread_task_file(int fd, char *buf, size_t cap) {
    if (fd < 0 || cap == 0) return -EINVAL;
    size_t len = 0;
    while (len < cap - 1) {
        size_t want = cap - 1 - len;
        ssize_t n = pread(fd, buf + len, want, (off_t)len);
        if (n > 0) {
            len += (size_t)n;
            // A /proc task file is generated whole on a read from its start: a read that did not
            // fill the buffer returned all of it (saves the second read that would return 0).
            if ((size_t)n < want) break;
        } else if (n == 0) {
            break;
        } else if (errno != EINTR) {
            return (errno == ENOENT || errno == ESRCH) ? -ESRCH : -errno;
        }
    }
    // An exited thread's file reads as empty rather than failing on some kernels.
    if (len == 0) return -ESRCH;
    buf[len] = '\0';
    return (int)len;
}

// async-signal-safe: pread and in-place parsing only.
int sw_thread_syscall_fd(int fd, sw_thread_syscall_t *out) {
    if (out == NULL) return -EINVAL;
    char buf[256];
    int len = pread_task_file(fd, buf, sizeof buf);
    if (len < 0) return len;
    return sw_parse_thread_syscall(buf, out);
}

// async-signal-safe: pread and in-place parsing only.
int sw_thread_stat_fd(int fd, int32_t tid, sw_thread_stat_t *out) {
    if (out == NULL) return -EINVAL;
    char buf[1024];
    int len = pread_task_file(fd, buf, sizeof buf);
    if (len < 0) return len;
    return sw_parse_thread_stat(buf, tid, out);
}

// async-signal-safe: pread and in-place parsing only.
int sw_thread_schedstat_fd(int fd, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *timeslices) {
    if (run_ns == NULL || wait_ns == NULL || timeslices == NULL) return -EINVAL;
    char buf[128];
    int len = pread_task_file(fd, buf, sizeof buf);
    if (len < 0) return len;
    return sw_parse_schedstat(buf, run_ns, wait_ns, timeslices);
}

int sw_fd_describe(int fd, char *buf, size_t cap) {
    if (fd < 0 || buf == NULL || cap == 0) return -EINVAL;
    char path[48];
    size_t len = 0;
    if (!append_str(path, sizeof path, &len, "/proc/self/fd/") ||
        !append_uint(path, sizeof path, &len, (uint64_t)fd))
        return -ENAMETOOLONG;
    ssize_t n = readlink(path, buf, cap - 1);
    if (n < 0) return errno == ENOENT ? -EBADF : -errno;  // no such entry: the fd is not open
    buf[n] = '\0';
    return (int)n;
}

// Not async-signal-safe (pthread_setname_np); called once per thread at start-up.
int sw_thread_set_name(const char *name) {
    if (name == NULL) return -EINVAL;
    // pthread_setname_np rejects names over 15 bytes with ERANGE; a cut name is more useful.
    char comm[16];
    size_t n = strlen(name);
    if (n > sizeof comm - 1) n = sizeof comm - 1;
    memcpy(comm, name, n);
    comm[n] = '\0';
    int rc = pthread_setname_np(pthread_self(), comm);
    return rc == 0 ? 0 : -rc;
}

// Not async-signal-safe: sysconf is not on the POSIX list (it does not allocate here, but no promise).
int sw_process_memory(uint64_t *rss_bytes, uint64_t *vm_bytes) {
    if (rss_bytes == NULL || vm_bytes == NULL) return -EINVAL;
    char buf[256];
    int fd;
    do {
        fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return -errno;
    ssize_t n;
    do {
        n = read(fd, buf, sizeof buf - 1);
    } while (n < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    if (n < 0) return -e;
    buf[n] = '\0';

    uint64_t size_pages, resident_pages;
    const char *p = parse_uint64(skip_spaces(buf), &size_pages);
    if (p != NULL) p = parse_uint64(skip_spaces(p), &resident_pages);
    if (p == NULL) return -EPROTO;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    *vm_bytes = size_pages * (uint64_t)page;
    *rss_bytes = resident_pages * (uint64_t)page;
    return 0;
}

#endif // SW_PLATFORM_SAMPLES
