// Waking the watchdog when the Swift concurrency pool is given work, so that an idle pool needs no
// scans: a hook on `swift_task_enqueueGlobal` (chained to whatever hook was there, never replacing
// it) that, while armed, bumps a generation word and wakes every thread waiting on it. The same word
// is the watchdog threads' sleep, so `stop()` and a change of loops wake them through it too.
#ifndef SW_POOL_WAKE_H
#define SW_POOL_WAKE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Installs the hook (counted: one per watchdog that wants it). Returns 0 when it is in place,
/// -1 when the concurrency runtime is not loaded (no `swift_task_enqueueGlobal_hook`), -2 when
/// another hook was installed on top of ours earlier (it may call ours: chaining ours to it would
/// loop) or the slot changed under the compare-and-swap.
int sw_pool_wake_install(void);

/// Drops one count; at zero the hook that was there before is put back, unless another hook was
/// installed on top of ours since (that one calls ours, so ours stays, disarmed).
void sw_pool_wake_uninstall(void);

/// Whether `swift_task_enqueueGlobal_hook` is ours now (someone may have replaced it).
int sw_pool_wake_is_hooked(void);

/// The next enqueue to the global executor stamps its instant and bumps the generation, once (then
/// the hook disarms itself: later enqueues cost one relaxed load); with `wake`, it also wakes the
/// waiters (a watchdog that wakes every few ms anyway arms without: it sees the bump in its next round).
void sw_pool_wake_arm(int wake);
/// Arms like `sw_pool_wake_arm(0)`, and the enqueue also sets the process's pool timer
/// (`sw_pool_wake_timer_fd`) to expire `delay_ns` later: a watchdog that sleeps in an epoll set
/// watching that timer wakes once, when the pool is to be scanned, rather than at the enqueue and
/// again at the scan.
void sw_pool_wake_arm_after(int64_t delay_ns);
/// The pool timer (a timerfd on CLOCK_MONOTONIC, close-on-exec, made on first use and never
/// closed), or -errno. Never read: watch it edge-triggered.
int sw_pool_wake_timer_fd(void);

/// The wake-up generation: a waiter reads it before it decides to sleep, then sleeps on it.
uint32_t sw_pool_wake_generation(void);

/// Bumps the generation and wakes every waiter (a watchdog's stop, a change of its loops).
void sw_pool_wake_all(void);

/// Sleeps while the generation equals `seen`, at most `timeout_ns` (EINTR and spurious wake-ups
/// just return: the caller re-checks its own state).
void sw_pool_wake_wait(uint32_t seen, int64_t timeout_ns);

/// When (CLOCK_MONOTONIC, ns) the last enqueue that found the hook armed came: the pool had no
/// work from the arming until then. 0 before the first.
uint64_t sw_pool_wake_enqueued_at(void);

/// Enqueues seen while armed (each ended a rest): for tests and the bench.
uint64_t sw_pool_wake_count(void);

#ifdef __cplusplus
}
#endif
#endif
