// Periodic sampling with no sampler thread: a per-thread kernel timer on the thread's own CPU clock
// sends the sampling signal to that thread; the handler walks its stack (frame pointers) into a
// ring that readers copy out later. CPU-time timers fire only while the thread runs, so a thread
// blocked in a system call is never interrupted (no EINTR), and an idle thread costs nothing.
#ifndef SW_RING_H
#define SW_RING_H

#include <stdint.h>
#include "sw_capture.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Most rings running at once.
#define SW_MAX_RINGS 64
/// Most entries one ring holds.
#define SW_RING_MAX_CAPACITY 1024

/// Which clock paces a ring.
typedef enum sw_ring_clock {
    /// The thread's CPU clock: fires only while the thread burns CPU (the default; no EINTR).
    SW_RING_CLOCK_THREAD_CPU = 0,
    /// Wall time: fires even while the thread sleeps or waits — interrupts system calls with EINTR.
    SW_RING_CLOCK_MONOTONIC = 1,
} sw_ring_clock_t;

/// Starts sampling thread `tid` every `interval_ns` of `clock` into a ring of `capacity` entries of
/// at most `max_frames` frames. The sampler must be installed (sw_sampler_install). Returns a ring
/// id >= 0, or a negative SW_ERR_* / -errno. Not for handlers (allocates the ring on first use).
int sw_ring_start(int32_t tid, int64_t interval_ns, sw_ring_clock_t clock, uint32_t max_frames,
                  uint32_t capacity);

/// Changes a running ring's interval (from now on). Returns 0, SW_ERR_INVALID or -errno.
int sw_ring_set_interval(int ring, int64_t interval_ns);

/// Makes a running ring's next sample come after `first_ns` of its clock, then every `interval_ns`.
/// Returns 0, SW_ERR_INVALID or -errno.
int sw_ring_fire_after(int ring, int64_t first_ns, int64_t interval_ns);

/// Stops a ring: deletes its timer. A signal already in flight finds the ring retired and does
/// nothing. The ring's memory is kept for reuse, never freed, so a late handler never touches freed
/// memory. Returns 0 or SW_ERR_INVALID.
int sw_ring_stop(int ring);

/// Copies the entries with sequence numbers >= `*next_seq` (oldest first, at most `max_out`, only
/// those still in the ring) into `out`; sets `*count` and advances `*next_seq`. Returns the number
/// of entries lost because the ring wrapped before they were read, or a negative error.
int64_t sw_ring_read(int ring, uint64_t *next_seq, sw_stack_t *out, uint32_t max_out, uint32_t *count);

/// Samples taken by the ring so far (its next sequence number).
uint64_t sw_ring_taken(int ring);

#ifdef __cplusplus
}
#endif
#endif
