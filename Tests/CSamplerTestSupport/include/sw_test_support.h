// Helpers for tests that need C-level behaviour Swift cannot express (vfork, a dlopen loop).
#ifndef SW_TEST_SUPPORT_H
#define SW_TEST_SUPPORT_H

#include <stdint.h>

#include "sw_foreign_workloads.h" // stalls inside Debian's libraries without frame pointers

/// vforks a child that sleeps `ms` then exits; the calling thread is suspended by the kernel
/// (uninterruptibly, only fatal signals wake it) until then. Returns the child's exit status.
int sw_test_vfork_sleep(unsigned ms);

/// Loops dlopen/dlsym/call/dlclose on `library` (calling `symbol`, a `const char *(void)` function)
/// and malloc/free until *stop becomes nonzero. Returns iterations, or -1 when dlopen fails.
int64_t sw_test_dlopen_malloc_loop(const char *library, const char *symbol, volatile int *stop);

/// Forks; the child checks that Stallwatch is usable there and exits with 0 when it is:
/// sw_current_tid() is the child's own id (10 otherwise); stopping the parent's ring `parent_ring`
/// leaves alone a timer the child created (11); a ring started on the child's own thread takes
/// samples while it works `work_ms` (12, 13 when it cannot start). Returns the child's exit status,
/// or -1 when fork fails.
int sw_test_fork_child(int parent_ring, unsigned work_ms);

/// Runs `n` fork + exec of /bin/true one after another; returns how many did not exit 0.
int sw_test_fork_exec_many(int n);

/// For `seconds`, alternates CPU bursts of about `burst_us` with blocking calls: nanosleep(1 ms),
/// epoll_wait on an idle epoll instance (1 ms), and read() on a pipe that a helper thread writes
/// every millisecond. Counts the calls that returned EINTR (none should, however this thread is
/// sampled) into *eintr and the blocking calls made into *calls. Returns 0, or -errno on setup failure.
int sw_test_burst_and_block(double seconds, unsigned burst_us, uint64_t *eintr, uint64_t *calls);

/// Maps `count` one-page regions with alternating permissions (so none merge), rebuilds the
/// sampler's memory map and checks that the last region is found. Returns 1 when found, 0 when
/// not, -errno when mapping fails; *grown receives how often the table had to grow. Unmaps them.
int sw_test_many_mappings(unsigned count, uint64_t *grown);

/// Runs a thread on the lower half of a 2 MiB mapping with its frame pointer aimed at the upper
/// half, lets the sampler learn the mapping (one capture, a 1 ms ring), then unmaps the upper half
/// behind the table's back and captures again (frame pointers, libunwind) and lets the ring tick
/// 20 ms. Without fault-safe bounds the handler faults. Returns 0 or a negative error; the frames
/// of the two late captures and the ring's late samples go to the out parameters.
int sw_test_walk_into_unmapped(uint64_t *frames_after, uint64_t *libunwind_frames_after, uint64_t *ring_samples,
                               uint32_t *stop_after);

/// Builds a fake stack on its own mapping — libc-style return addresses, a ghost frame record left
/// by a returned call, then a live chain of three records — and scans it as a blocked thread's
/// (sw_capture_blocked). Returns 0 or a negative error; up to 16 frames found go to `got`, the
/// frames a correct scan finds (PC, both wrapper returns, the three records' returns) to `expected`.
int sw_test_blocked_scan_ghost(uint64_t *got, uint32_t *got_count, uint64_t *expected, uint32_t *expected_count);

/// Sets whether the process is dumpable (prctl PR_SET_DUMPABLE; variadic, so not callable from
/// Swift) and returns the previous setting, or -errno.
int sw_test_set_dumpable(int dumpable);

/// Installs a `swift_task_enqueueGlobal_hook` of the test's own that counts the jobs it passes on
/// (as SwiftNIO's executor take-over installs one), with a compare-and-swap from no hook. Returns 0,
/// or -1 when a hook was already set or the symbol is missing.
int sw_test_install_counting_enqueue_hook(void);
/// Jobs the counting hook passed on.
uint64_t sw_test_counting_enqueue_hook_jobs(void);
/// Whether `swift_task_enqueueGlobal_hook` is the counting hook now; 0 when it is NULL; -1 other.
int sw_test_enqueue_hook_state(void);
/// Sets `swift_task_enqueueGlobal_hook` back to NULL if it is the counting hook.
void sw_test_remove_counting_enqueue_hook(void);
/// The task running on the calling thread (`swift_task_getCurrent`), 0 outside any.
uint64_t sw_test_current_task(void);
/// The calling thread's thread pointer (the value sw_thread_pointer_from_stack finds for it).
uint64_t sw_test_thread_pointer(void);
/// Overwrites `swift_task_enqueueGlobal_hook` with the counting hook, which does not chain to what
/// was there (as a careless library would); returns what was there, for the restore below.
void *sw_test_replace_enqueue_hook(void);
/// Puts `hook` (from the call above) back.
void sw_test_restore_enqueue_hook(void *hook);

/// Pins the calling thread to `cpu` (-1: the highest CPU its affinity allows) and, if `idle_policy`, gives it SCHED_IDLE (a weight of 3 against
/// a normal thread's 1024): a normal thread spinning on that CPU leaves it almost no time.
/// 0, or -errno.
int sw_test_pin_self(int cpu, int idle_policy);
/// Undoes `sw_test_pin_self`: SCHED_OTHER again, and the CPUs of the process's first thread. 0, or -errno.
int sw_test_release_self(void);

/// An event loop's epoll descriptor as SwiftNIO makes it: an eventfd registered edge-triggered.
/// Returns the epoll descriptor and writes the eventfd to `*eventfd_out`, or -errno.
int sw_test_loop_epoll(int *eventfd_out);
/// Another thread's `execute`: one write to the loop's eventfd.
void sw_test_loop_kick(int eventfd);
/// What the loop's thread does when woken: takes its ready events (returns how many) and reads
/// its eventfd.
int sw_test_loop_take_events(int epfd, int eventfd);
/// A loop's thread at rest: blocks in `epoll_wait` until an event comes, then takes it and reads
/// its eventfd. Returns the events taken, or -errno.
int sw_test_loop_sleep(int epfd, int eventfd);

#endif
