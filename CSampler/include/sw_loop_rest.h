// Resting event loops: a watchdog whose event loops all sleep in `epoll_wait` stops looking at them
// every few ms and waits instead on their epoll descriptors, nested in an epoll set of its own, so
// the kernel wakes it when one of them gets an event (I/O, another thread's `execute`, its timer).
// While it waits there, `sw_pool_wake_all()` and the pool's enqueue hook still wake it.
#ifndef SW_LOOP_REST_H
#define SW_LOOP_REST_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/// A new set for one watchdog: an epoll descriptor (close-on-exec) holding the process's wake-up
/// event, or -errno.
int sw_loop_rest_open(void);
/// Closes a set (the loops' registrations go with it).
void sw_loop_rest_close(int set);
/// Watches `loop_epfd` (the descriptor a loop's thread waits in) for one event, reported with
/// `token`: 0, or -errno (`-EBADF` when it was closed, `-EINVAL` when it is not an epoll descriptor
/// or is the set itself). Watching it again re-arms it.
int sw_loop_rest_arm(int set, int loop_epfd, uint64_t token);
/// Stops watching `loop_epfd`: 0, or -errno (`-ENOENT` when it was not watched).
int sw_loop_rest_disarm(int set, int loop_epfd);
/// Sleeps while the wake-up generation (`sw_pool_wake_generation`) equals `seen`, at most
/// `timeout_ns`, or until a watched loop gets an event. Writes the tokens of the loops that got one
/// (at most `max`) to `fired` and returns how many, or -errno. EINTR returns 0: the caller
/// re-checks its own state.
int sw_loop_rest_wait(int set, uint32_t seen, int64_t timeout_ns, uint64_t *fired, int max);
#ifdef __cplusplus
}
#endif
#endif
