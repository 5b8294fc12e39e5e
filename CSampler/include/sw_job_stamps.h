// When each job given to the Swift concurrency pool was queued, and which task a pool thread runs
// now, both read by the watchdog without signalling anyone: the stamps that date a pool job's start
// without scanning the pool every few milliseconds.
//
// The enqueue hook (pool_wake.c) writes each job's instant into a fixed table keyed by the job's
// address (a task is its own job each time it is resumed). A pool thread keeps the task it runs in
// a thread-local of the concurrency runtime; once that slot's offset is learned, the watchdog reads
// it at a fixed distance from the thread's pointer. A task seen running now, whose stamp is newer
// than the last look that saw the thread elsewhere, began running after that stamp: queued, then
// taken at once or after a queue wait (which dates it early by that wait, never late).
#ifndef SW_JOB_STAMPS_H
#define SW_JOB_STAMPS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Starts (1) or stops (0) stamping enqueues; counted, like the hook itself: stamps are written
/// while at least one watchdog asked for them. Until then an enqueue costs one relaxed load more.
void sw_job_stamps_enable(int on);

/// How many watchdogs ask for stamps now (0: an enqueue writes none).
int sw_job_stamps_enabled(void);

/// When `job` was last queued on the global executor (CLOCK_MONOTONIC_COARSE, ns: about one
/// scheduler tick behind CLOCK_MONOTONIC, 6 ns to read against 28 ns for CLOCK_MONOTONIC), or 0 when its entry was overwritten by another job's
/// (the table keeps the newest job per slot) or stamping was off then.
uint64_t sw_job_stamp_of(uint64_t job);

/// Learns, on a thread running a Swift task, where the concurrency runtime keeps the running task:
/// the offset from the thread pointer of the one thread-local that holds the task, confirmed by a
/// second task. Returns sw_task_slot_state. Not for handlers; never blocks (a learner that finds
/// another one busy returns the state as it is).
int sw_task_slot_observe(void);

/// 1 when the slot (and where glibc keeps a thread's id) is known, 0 while learning, -1 when it
/// cannot be learned here (`why`, if given, says why).
int sw_task_slot_state(const char **why);

/// The thread pointer of thread `tid`, from an address `sp` on its stack (its stack pointer while
/// blocked): glibc keeps the thread's descriptor at a fixed distance from its stack mapping's top.
/// 0 unless the descriptor found there names `tid`.
uint64_t sw_thread_pointer_from_stack(int32_t tid, uint64_t sp);

/// The task thread `tid` (whose thread pointer is `tp`) runs now: 1 and `*task` (0: none), or 0
/// when the slot is not known or the memory there no longer belongs to `tid` (it exited).
int sw_thread_running_task(int32_t tid, uint64_t tp, uint64_t *task);

#ifdef __cplusplus
}
#endif
#endif
