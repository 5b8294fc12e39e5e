// Counting one thread's system calls with the kernel's own tracepoints (perf_event_open in counting
// mode on raw_syscalls:sys_enter and syscalls:sys_enter_rt_sigreturn): how tests and `bench sampler`
// show that a sampling handler makes none. Not used by the sampler itself.
#ifndef SW_SYSCALL_COUNT_H
#define SW_SYSCALL_COUNT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Counters of one thread's system calls.
typedef struct sw_syscall_counter {
    int all_fd;       ///< raw_syscalls:sys_enter
    int sigreturn_fd; ///< syscalls:sys_enter_rt_sigreturn: a signal handler's return, not the handler's own
} sw_syscall_counter_t;

/// Starts counting the system calls thread `tid` makes from now on. Returns 0, or -errno: -ENOENT
/// when tracefs (/sys/kernel/tracing) is not readable (not root, not mounted), the kernel's refusal
/// otherwise (perf_event_paranoid, seccomp). Not for handlers.
int sw_syscall_counter_open(int32_t tid, sw_syscall_counter_t *c);

/// Reads both counts. Returns 0 or -errno.
int sw_syscall_counter_read(const sw_syscall_counter_t *c, uint64_t *all, uint64_t *sigreturn);

/// Stops counting.
void sw_syscall_counter_close(sw_syscall_counter_t *c);

#ifdef __cplusplus
}
#endif
#endif
