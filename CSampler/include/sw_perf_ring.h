// Periodic sampling with no signal at all: a perf event (software task-clock) on one thread makes
// the kernel record that thread's user call chain — and its user registers plus a copy of the top
// of its user stack, for the unwind-table walk where frame pointers stop — into a memory-mapped
// ring every interval of the thread's CPU time. Nobody is woken per sample: the watchdog reads the
// ring when it checks. No handler runs on the sampled thread, so nothing of the program's changes
// (no EINTR, no signal mask to respect: threads that block every signal are sampled too).
//
// Refused where perf_event_open is (perf_event_paranoid > 2, seccomp in containers, no
// CONFIG_PERF_EVENTS): the caller falls back to the timer ring (sw_ring.h) and says why.
#ifndef SW_PERF_RING_H
#define SW_PERF_RING_H

#include <stdint.h>
#include "sw_capture.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Most perf rings open at once.
#define SW_MAX_PERF_RINGS 64
/// Default bytes of user stack the kernel copies with each sample (0: the kernel's call chain only).
#define SW_PERF_RING_DEFAULT_STACK_BYTES 8192u

/// Starts sampling thread `tid` every `interval_ns` of its CPU time. The ring holds about
/// `capacity` samples of at most `max_frames` frames between reads (older unread samples are kept,
/// newer ones are dropped and counted as lost when it is full: unlike the timer ring, which
/// overwrites the oldest). A forked child inherits the event's descriptor but not the sampling of
/// the parent's thread. `stack_bytes` (a multiple of 8,
/// at most 65528; 0: none) of the thread's stack are copied with every sample for the table walk.
/// Returns a ring id >= 0, or -errno (the kernel's refusal: EACCES, EPERM, ENOSYS, ENOENT...),
/// SW_ERR_THREAD_GONE, SW_ERR_BUSY or SW_ERR_INVALID. Not for handlers.
int sw_perf_ring_start(int32_t tid, int64_t interval_ns, uint32_t max_frames, uint32_t capacity,
                       uint32_t stack_bytes);

/// Moves the samples the kernel recorded since the last read (oldest first, at most `max_out`)
/// into `out`, walked: each stack's unwinder is SW_UNWIND_FRAME_POINTER, its driver SW_DRIVER_PERF.
/// Sets `*count`. Returns the number of samples the kernel dropped (ring full) since the last
/// read, or a negative error. Not for handlers; one reader per ring at a time.
int64_t sw_perf_ring_read(int ring, sw_stack_t *out, uint32_t max_out, uint32_t *count);

/// Samples read from the ring so far plus those the kernel dropped.
uint64_t sw_perf_ring_taken(int ring);

/// Changes the interval from the next sample on. Returns 0, SW_ERR_INVALID or -errno.
int sw_perf_ring_set_interval(int ring, int64_t interval_ns);

/// Stops sampling (the event is disabled); samples already recorded can still be read.
int sw_perf_ring_stop(int ring);

/// Closes the event and unmaps the ring; the id may be reused. Only after the ring's last read: a
/// read does not hold the table's lock while it decodes. Returns 0 or SW_ERR_INVALID.
int sw_perf_ring_release(int ring);

/// Test hook: while `err` is non-zero, sw_perf_ring_start refuses with -err as the kernel would
/// (EACCES: perf_event_paranoid; EPERM / ENOSYS: seccomp), without asking the kernel.
void sw_perf_ring_test_refuse(int err);

#ifdef __cplusplus
}
#endif
#endif
