// Per-thread CPU time from the kernel's CPU clocks: one clock_gettime, no /proc parsing.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_cpuclock.h"

#include <errno.h>
#include <time.h>

// async-signal-safe: arithmetic only.
clockid_t sw_thread_cpu_clockid(int32_t tid) {
    // The kernel encodes ((~tid) << 3) | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED. Shifting in unsigned
    // arithmetic keeps it well defined in C; the conversion back wraps as the kernel expects.
    return (clockid_t)(((~(uint32_t)tid) << 3) | 6u);
}

static uint64_t to_ns(const struct timespec *ts) {
    return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

// async-signal-safe: clock_gettime is on the POSIX list; errno is preserved for the caller.
int sw_thread_cpu_time_ns(int32_t tid, uint64_t *ns) {
    // tid 0 would silently mean "the calling thread" to the kernel; refuse it to catch bugs.
    if (tid <= 0 || ns == NULL) return -EINVAL;
    int saved = errno;
    struct timespec ts;
    int rc = clock_gettime(sw_thread_cpu_clockid(tid), &ts);
    int e = errno;
    errno = saved;
    if (rc != 0) {
        // The kernel cannot resolve the clock of a thread that has gone (or, once the tid is
        // reused, belongs to another process): it reports EINVAL.
        return e == EINVAL ? -ESRCH : -e;
    }
    *ns = to_ns(&ts);
    return 0;
}

// async-signal-safe: clock_gettime; errno is preserved for the caller.
int sw_process_cpu_time_ns(uint64_t *ns) {
    if (ns == NULL) return -EINVAL;
    int saved = errno;
    struct timespec ts;
    int rc = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    int e = errno;
    errno = saved;
    if (rc != 0) return -e;
    *ns = to_ns(&ts);
    return 0;
}

#endif // SW_PLATFORM_SAMPLES
