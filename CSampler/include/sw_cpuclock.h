// CPU time of any thread of this process, read from the kernel's per-thread CPU clock (no /proc parsing).
#ifndef SW_CPUCLOCK_H
#define SW_CPUCLOCK_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/// CPU time consumed by thread `tid` so far, in nanoseconds. Async-signal-safe (clock_gettime).
/// Returns 0, -ESRCH when the thread is gone, or -errno.
int sw_thread_cpu_time_ns(int32_t tid, uint64_t *ns);

/// CPU time consumed by the whole process so far (all threads), in nanoseconds.
int sw_process_cpu_time_ns(uint64_t *ns);

/// The kernel CPU clock id of thread `tid` of this process (CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD),
/// usable with clock_gettime and timer_create. Async-signal-safe (arithmetic only); the id is
/// only meaningful while the thread lives. `tid` must be > 0.
clockid_t sw_thread_cpu_clockid(int32_t tid);

#ifdef __cplusplus
}
#endif
#endif
