// Resting event loops: a watchdog whose event loops all sleep in `epoll_wait` stops looking at them
// every few ms and waits instead on their epoll descriptors, so the kernel wakes it when one of them
// gets an event (I/O, another thread's `execute`, its timer). While it waits, `sw_pool_wake_all()`
// and the pool's enqueue hook still wake it.
//
// A loop's descriptor is watched by an AIO poll request whose completion is queued in the set's
// own AIO ring and counted in an eventfd: the loop's wake is kept until the watchdog reads it. A
// descriptor nested in an epoll set is not: epoll re-checks it when it delivers the event, and a
// loop thread that took its own events first leaves nothing to deliver (the watchdog is woken and
// sleeps on). Where AIO cannot be set up, descriptors are nested (`sw_loop_rest_keeps_wakes` 0).
#ifndef SW_LOOP_REST_H
#define SW_LOOP_REST_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/// One watchdog's set of resting loops.
typedef struct sw_loop_rest sw_loop_rest_t;
/// A new set holding the process's wake-up event, or NULL with `*error` set to -errno.
sw_loop_rest_t *sw_loop_rest_open(int *error);
/// Closes a set (its requests and registrations go with it).
void sw_loop_rest_close(sw_loop_rest_t *set);
/// 1 when a loop's wake is kept until read (AIO poll requests), 0 when loops are nested in epoll.
int sw_loop_rest_keeps_wakes(const sw_loop_rest_t *set);
/// Why AIO poll could not be used (-errno of `io_setup` or of its eventfd), 0 when it is.
int sw_loop_rest_aio_error(const sw_loop_rest_t *set);
/// Adds a descriptor whose readiness only ends the set's wait (edge-triggered, never read here:
/// its owner takes what made it ready): 0 or -errno.
int sw_loop_rest_add_waker(sw_loop_rest_t *set, int fd);
/// Watches `loop_epfd` (the descriptor a loop's thread waits in) for one event, reported with
/// `token`: 0, or -errno (`-EBADF` when it was closed, `-EINVAL` when it is not an epoll descriptor
/// or is one of the set's own). Watching it again re-arms it.
int sw_loop_rest_arm(sw_loop_rest_t *set, int loop_epfd, uint64_t token);
/// Stops watching `loop_epfd`: 0, or -errno (`-ENOENT` when it was not watched). Its AIO request
/// may stay in flight, for the next arm of the same loop (see `sw_loop_rest_release_idle`).
int sw_loop_rest_disarm(sw_loop_rest_t *set, int loop_epfd);
/// Stops watching every loop not armed now: their requests are cancelled and their descriptors
/// forgotten (after the watched loops changed; a disarmed loop's request otherwise stays in flight
/// for its next arm, keeping its epoll instance alive).
void sw_loop_rest_release_idle(sw_loop_rest_t *set);
/// Sleeps while the wake-up generation (`sw_pool_wake_generation`) equals `seen`, at most
/// `timeout_ns`, or until a watched loop gets an event. Writes the tokens of the loops that got one
/// (at most `max`) to `fired` and returns how many, or -errno. EINTR returns 0: the caller
/// re-checks its own state.
int sw_loop_rest_wait(sw_loop_rest_t *set, uint32_t seen, int64_t timeout_ns, uint64_t *fired, int max);
#ifdef __cplusplus
}
#endif
#endif
