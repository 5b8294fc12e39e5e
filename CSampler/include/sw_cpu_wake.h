// Waking a watchdog that sleeps without a deadline once the process has used a given amount of CPU
// time, so that its CPU watch needs no periodic wake-up while the process idles: a POSIX timer on
// the process's CPU clock, directed at the watchdog thread with a real-time signal that thread
// blocks, read through a signalfd the thread's epoll set watches. No handler is installed and no
// other thread ever sees the signal.
#ifndef SW_CPU_WAKE_H
#define SW_CPU_WAKE_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/// One watchdog thread's CPU wake.
typedef struct sw_cpu_wake sw_cpu_wake_t;
/// Call on the thread that will wait on it: blocks the wake's signal in that thread (the last
/// real-time signal, the one before it when `avoid_signal` is that one) and makes the timer and the
/// descriptor. NULL with `*error` = -errno when one of them cannot be made (nothing is left behind).
sw_cpu_wake_t *sw_cpu_wake_open(int avoid_signal, int *error);
/// The signalfd that becomes readable when the timer expires (level-triggered until re-armed).
int sw_cpu_wake_fd(const sw_cpu_wake_t *wake);
/// Takes any expiry already signalled, then arms the timer to expire once the process has used
/// `cpu_ns` more CPU time (0 disarms it). Returns 1 when an expiry was pending, 0 when none, or
/// -errno when the timer cannot be set.
int sw_cpu_wake_arm(sw_cpu_wake_t *wake, int64_t cpu_ns);
/// Deletes the timer, closes the descriptor and takes any pending signal; call on the thread that
/// opened it (the signal stays blocked there).
void sw_cpu_wake_close(sw_cpu_wake_t *wake);
#ifdef __cplusplus
}
#endif
#endif
