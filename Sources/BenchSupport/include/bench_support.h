// Support for the `bench` command only (never linked into the library): a malloc counter and a
// SIGPROF delivery recorder used to measure a peer profiler.
#ifndef BENCH_SUPPORT_H
#define BENCH_SUPPORT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Allocations (malloc, calloc, realloc, memalign family) made by the whole process so far.
/// Counted by the bench executable's own malloc, which forwards to glibc's (no LD_PRELOAD).
uint64_t bench_malloc_count_process(void);

/// Allocations made by the calling thread so far.
uint64_t bench_malloc_count_thread(void);

/// Allocations made so far by the thread `tid` (any thread may ask; 0 when it never allocated).
uint64_t bench_malloc_count_tid(int32_t tid);

/// 1 when the counting malloc is the one the process uses (interposition worked), else 0.
int bench_malloc_counter_active(void);

/// Installs a SIGPROF handler that records the CLOCK_MONOTONIC time of every delivery to the thread
/// `target` (a pthread_t) into a preallocated buffer of
/// `capacity` entries, counts deliveries to other threads, and then calls the handler that was
/// installed before (the peer profiler's). Returns 0 or -errno. Call once.
int bench_sigprof_recorder_install(uint64_t target_pthread, uint32_t capacity);

/// Deliveries recorded on the target so far; copies at most `max` times into `out`.
uint64_t bench_sigprof_recorded(uint64_t *out, uint64_t max);

/// Deliveries to other threads so far.
uint64_t bench_sigprof_other_threads(void);

/// 1 when a handler was installed before the recorder (the peer profiler is active).
int bench_sigprof_chained(void);

/// timer/empty, the timer ring's floor: installs a handler on `signo` that records the time of each
/// tick of a bench_timer_floor_start timer into a pre-touched buffer of `capacity` entries, and
/// chains everything else to the handler it replaced. Call before the sampler is installed, so that
/// the sampler's dispatcher chains to it. Returns 0 or -errno. Idempotent.
int bench_timer_floor_install(int signo, uint32_t capacity);

/// Starts a timer on thread `tid`'s CPU clock that sends `signo` to it every `interval_ns`.
/// Returns a timer id >= 0 or -errno.
int bench_timer_floor_start(int signo, int32_t tid, int64_t interval_ns);

/// Deletes a timer (a tick in flight finds it stopped and records nothing).
void bench_timer_floor_stop(int timer);

/// Copies the ticks numbered from `from` (oldest still kept first, at most `max`) into `times`
/// (CLOCK_MONOTONIC ns) and `tids`; sets `*count`; returns the number to read from next time.
uint64_t bench_timer_floor_read(uint64_t from, uint64_t *times, int32_t *tids, uint64_t max, uint64_t *count);

/// The number the next tick will get: reading from it skips every tick recorded so far.
uint64_t bench_timer_floor_head(void);

/// From now on the timer/empty handler also walks the interrupted thread's frame records, bare (no
/// unwind table, no module check: reading the records is all it does), up to `max_frames` frames,
/// and keeps the walk's time; 0 turns it off. For the unwind-path table's floor of a walk.
void bench_timer_floor_set_walk(uint32_t max_frames);

/// Like bench_timer_floor_read, with each tick's bare-walk time (ns, 0 when the walk was off) and
/// frames in place of its time.
uint64_t bench_timer_floor_read_walks(uint64_t from, int32_t *tids, uint64_t *walk_ns, uint32_t *frames, uint64_t max,
                                      uint64_t *count);

/// Spins on the calling thread at `depth` frames of this (frame-pointer) code until *stop becomes
/// non-zero, counting iterations into *progress. The frame-pointer path of a stack walk.
void bench_spin_fp(int depth, const volatile int *stop, volatile uint64_t *progress);

/// The same, with the spin inside a qsort comparator: glibc's qsort_r and msort_with_tmp (built
/// without frame pointers) are two frames in the middle that only unwind tables describe.
void bench_spin_in_qsort(int depth, const volatile int *stop, volatile uint64_t *progress);

/// Resident set size of the process in bytes (from /proc/self/statm), 0 when unreadable.
uint64_t bench_rss_bytes(void);

#ifdef __cplusplus
}
#endif
#endif
