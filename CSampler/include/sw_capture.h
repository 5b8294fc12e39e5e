// Capture the stack of another thread of this process: a signal carries a request cookie to the
// target, the handler captures into a pre-allocated slot, the requester waits with a deadline.
//
// Handler-side rules: no malloc, no locks, only async-signal-safe calls, errno saved and restored.
// A late handler (its request abandoned) only touches static memory and loses a generation check.
#ifndef SW_CAPTURE_H
#define SW_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include "sw_threads.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Most frames one captured stack holds.
#define SW_MAX_FRAMES 256

/// Which unwinder produced a stack.
typedef enum sw_unwinder {
    /// Frame-pointer walk in the handler; every link checked against the thread's stack bounds.
    SW_UNWIND_FRAME_POINTER = 0,
    /// libunwind (DWARF CFI), run *outside* the handler on registers and a stack copy taken by it,
    /// with a lock-free module lookup (_dl_find_object): never takes the loader lock.
    SW_UNWIND_LIBUNWIND = 1,
    /// No signal: a checked frame-record scan from the SP/PC the kernel reports for a thread
    /// blocked in a system call.
    SW_UNWIND_SYSCALL_SCAN = 2,
    /// The handler answers with the PC only: measures the bare signal round trip (the floor).
    SW_UNWIND_NONE = 3,
} sw_unwinder_t;

/// What took a sample (sw_stack_t.driver).
enum {
    SW_DRIVER_SIGNAL = 0, ///< a signal's handler on the thread (a request's answer, a timer ring's tick)
    SW_DRIVER_PERF = 1,   ///< the kernel, for a perf event (sw_perf_ring.h, sw_capture_perf): no signal
};

/// One captured stack. frames[0] is the interrupted PC; the rest are return addresses.
typedef struct sw_stack {
    uint32_t count;
    uint8_t unwinder;        ///< sw_unwinder_t
    uint8_t truncated;       ///< 1 when the walk stopped at max_frames, a bad link or the copy's end
    uint8_t stack_known;     ///< 1 when the thread's stack bounds were known (else PC only)
    uint8_t leaf_caller_recovered; ///< 1 when frames[1] was recovered from words above SP (a guess)
    int32_t tid;
    uint64_t sp;             ///< interrupted stack pointer
    uint64_t handler_ns;     ///< time the handler spent capturing (thread CPU clock), 0 if not measured
    uint64_t latency_ns;     ///< request sent -> answer seen by the requester (monotonic)
    uint64_t taken_at_ns;    ///< CLOCK_MONOTONIC when the handler started capturing (a blocked thread: when its stack was read), 0 if unknown
    /// Up to 8 words from SP up to the first frame record, copied by the handler so that the
    /// caller of a frameless leaf can be recovered later, outside it (reading code to check a
    /// return address is not safe in a handler: the library may be unloaded). Consumed by the
    /// library before a stack is returned.
    uint64_t leaf_words[8];
    uint8_t leaf_word_count;
    uint8_t stop_reason;     ///< why the walk ended (SW_STOP_*): SW_STOP_ROOT only for a whole stack
    uint8_t table_frames;    ///< frames found through unwind tables (.eh_frame) rather than frame records
    uint8_t driver;          ///< SW_DRIVER_*: what took the sample (a signal's handler, or the kernel)
    /// Where the async frames begin: the callers of a Swift async function, read from its chain of
    /// async contexts (sw_async.h), stored in frames[async_at ..< async_at + async_count] right
    /// after the async function's own frame. Each is a resume function's entry + 1, so that the
    /// pc - 1 rule of return addresses lands on it. 0 and 0 when the stack has none.
    uint16_t async_at;
    uint8_t async_count;
    uint8_t async_end;       ///< SW_ASYNC_*: how the chain ended (SW_ASYNC_NONE: no async frame met)
    /// The Swift task's current priority (its raw value: 25 userInitiated, 21 default, 17 utility,
    /// 9 background), with task_id; 0 when none was read.
    uint8_t task_priority;
    /// The request the interrupted code served (the task-local set by sw_request_key_set's key), 0
    /// when none or not read (captures without a handler).
    uint64_t request_tag;
    /// The Swift task the interrupted code ran (its id, as the runtime numbers tasks), read by the
    /// signal handler for a stack that runs a task job; 0 when none, or not read (captures without
    /// a handler on the thread: blocked threads, perf samples).
    uint64_t task_id;
    /// With async_end SW_ASYNC_UNREADABLE: the context the handler could not read (its mapping not
    /// in the map table yet). A request's requester reads on from it at once (sw_capture does).
    uint64_t async_ctx;
    /// Last, so that a capture's writes (the fields above, then its first frames) share cache lines
    /// and a page instead of straddling a 2 KiB array.
    uint64_t frames[SW_MAX_FRAMES];
} sw_stack_t;

/// Why a walk ended (sw_stack_t.stop_reason). Only SW_STOP_ROOT means the stack is whole.
enum {
    SW_STOP_ROOT = 0,           ///< walked to the thread's first frame
    SW_STOP_FRAME_LIMIT = 1,    ///< max_frames reached
    SW_STOP_BAD_LINK = 2,       ///< a frame record or table row led to no valid frame
    SW_STOP_NO_UNWIND_INFO = 3, ///< code with neither a frame record nor an unwind-table entry
    SW_STOP_UNREADABLE = 4,     ///< the next frame lies outside the readable stack (or its copy)
    SW_STOP_STACK_UNKNOWN = 5,  ///< the thread's stack was not in the map table: the PC only
    SW_STOP_TIMED_OUT = 6,      ///< the unwind ran out of time
    SW_STOP_BUDGET = 7,         ///< more frames needed the unwind table than a handler may spend
    SW_STOP_NOT_WALKED = 8,     ///< no walk was asked for (SW_UNWIND_NONE)
};

/// How a stack's async context chain ended (sw_stack_t.async_end).
enum {
    SW_ASYNC_NONE = 0,        ///< the walk met no async function (or the runtime's layout is not learnt)
    SW_ASYNC_WHOLE = 1,       ///< followed to the task's first context (its parent is null)
    SW_ASYNC_UNREADABLE = 2,  ///< a context outside every readable mapping known (or not readable now)
    SW_ASYNC_BAD_RESUME = 3,  ///< a resume function outside executable code: not a context chain
    SW_ASYNC_LIMIT = 4,       ///< longer than SW_ASYNC_MAX_FRAMES, or the stack's frame limit reached
};

/// Most async frames one chain adds.
#define SW_ASYNC_MAX_FRAMES 64

/// Error codes (negative return values). Other negative values are -errno.
enum {
    SW_ERR_NOT_INSTALLED = -10001,  ///< sw_sampler_install has not succeeded
    SW_ERR_THREAD_GONE = -10002,    ///< the thread does not exist (exited)
    SW_ERR_SIGNAL_BLOCKED = -10003, ///< the thread blocks the sampling signal
    SW_ERR_TIMED_OUT = -10004,      ///< no answer before the deadline
    SW_ERR_SIGNAL_IN_USE = -10005,  ///< another handler owns the signal and chaining was refused
    SW_ERR_BUSY = -10006,           ///< no free request slot (abandoned requests still running)
    SW_ERR_SELF = -10007,           ///< the caller asked to capture its own thread by signal
    SW_ERR_INVALID = -10008,        ///< bad argument
    SW_ERR_NOT_BLOCKED = -10009,    ///< sw_capture_blocked: the thread is not blocked in a syscall
    SW_ERR_ASLEEP = -10010,         ///< sw_capture_awake: the thread slept (interruptibly) when asked
    SW_ERR_STILL_PENDING = -10011,  ///< the signal of an earlier unanswered request is still pending
                                    ///< for the thread: nothing sent (out->latency_ns: how long ago
                                    ///< that one went)
};

/// Installs the sampling handler on `signo` (SIGPROF: libdispatch workers block SIGUSR1/SIGUSR2 and
/// most others through `_dispatch_sigmask`, but leave SIGPROF open).
/// An existing handler is kept and chained to for every signal that is not ours, unless
/// `allow_chain` is 0, in which case an existing handler makes this fail with SW_ERR_SIGNAL_IN_USE.
/// Also primes libunwind and builds the memory-map table, outside any handler.
/// Idempotent for the same signal; -EBUSY for a different signal once installed. The handler stays
/// installed for the life of the process so that a late signal never meets the default action.
int sw_sampler_install(int signo, int allow_chain);

/// The signal installed, or 0.
int sw_sampler_signal(void);

/// Who handles the sampling signal now (sw_sampler_handler_state).
enum {
    SW_HANDLER_NOT_INSTALLED = 0, ///< sw_sampler_install has not succeeded
    SW_HANDLER_OURS = 1,          ///< our handler: sampling works
    SW_HANDLER_REPLACED = 2,      ///< another handler took the signal over: our requests and ticks go to it
    SW_HANDLER_DEFAULT = 3,       ///< reset to the default action: a tick or request would kill the process
    SW_HANDLER_IGNORED = 4,       ///< set to SIG_IGN: requests and ticks are lost
};

/// Reads the signal's current disposition (one sigaction call) and says whether it is still ours.
/// Returns an SW_HANDLER_* value or -errno.
int sw_sampler_handler_state(void);

/// Installs our handler again after somebody replaced it, chaining to theirs. Returns 0 or an error.
int sw_sampler_reclaim(void);

/// Re-reads /proc/self/maps (thread stacks, executable ranges). Call when threads or libraries change;
/// sw_capture does it by itself when a target's stack pointer falls outside every known stack.
int sw_maps_refresh(void);

/// Captures the stack of thread `tid` (not the caller) with `unwinder`, waiting at most `timeout_ns`.
/// Returns 0 or a negative SW_ERR_* / -errno. Safe to call from several threads at once.
/// A thread that let an earlier request time out and still has not taken its signal gets no new
/// one: SW_ERR_STILL_PENDING at once.
int sw_capture(int32_t tid, sw_unwinder_t unwinder, uint32_t max_frames, int64_t timeout_ns,
               sw_stack_t *out);

/// sw_capture, but no signal goes to a thread in an interruptible sleep (`S` in
/// /proc/self/task/<tid>/stat, read just before the signal would be sent): a signal ends a
/// `nanosleep`, `epoll_wait` or `poll` with EINTR, and a caller's own look at the thread is
/// microseconds to milliseconds older. Returns SW_ERR_ASLEEP then, with nothing sent.
int sw_capture_awake(int32_t tid, sw_unwinder_t unwinder, uint32_t max_frames, int64_t timeout_ns,
                       sw_stack_t *out);

/// Held-still snapshot: signals every thread in `tids`, each captures and then parks in its handler
/// until sw_snapshot_release or until `park_ns` passes (its own bound, so a dead requester never
/// leaves threads stuck). results[i] receives 0 or a negative error per thread. Returns the number
/// of threads held, or a negative error. One snapshot at a time (others get SW_ERR_BUSY).
int sw_snapshot_hold(const int32_t *tids, size_t n, sw_unwinder_t unwinder, uint32_t max_frames,
                     int64_t timeout_ns, int64_t park_ns, sw_stack_t *outs, int *results);

/// Releases the threads held by sw_snapshot_hold. Returns 1 when every held thread was still parked
/// at release (the snapshot was consistent), 0 when some had already left on their own deadline.
int sw_snapshot_release(void);

/// Recovers the user stack of a thread blocked in a system call without signalling it, from the
/// SP and PC in `sc` (from sw_thread_syscall) and a checked scan for frame records.
int sw_capture_blocked(int32_t tid, const sw_thread_syscall_t *sc, uint32_t max_frames,
                       sw_stack_t *out);

/// Bytes of stack above SP a blocked thread's scan copies at most.
#define SW_BLOCKED_SCAN_BYTES (64 * 1024)

/// sw_capture_blocked with the scan's copy in `scratch` (8-byte aligned, `scratch_bytes` long; at
/// most SW_BLOCKED_SCAN_BYTES are used): no allocation. A NULL or too small scratch is allocated
/// for the call, as sw_capture_blocked does.
int sw_capture_blocked_into(int32_t tid, const sw_thread_syscall_t *sc, uint32_t max_frames, sw_stack_t *out,
                            void *scratch, size_t scratch_bytes);

/// The stack of a *running* thread without a signal: the kernel samples it (perf_event_open, a
/// task-clock event on that thread with its user registers and a copy of its user stack) and the
/// walk runs on the copy. For threads that block the sampling signal. Waits at most `timeout_ns`
/// for the thread to run (a sleeping thread gives SW_ERR_TIMED_OUT). -errno where the kernel
/// refuses perf events (perf_event_paranoid, seccomp). Not for handlers.
int sw_capture_perf(int32_t tid, uint32_t max_frames, int64_t timeout_ns, sw_stack_t *out);

/// The calling thread's own stack (frame pointers), from the caller of this function outwards.
/// Not for signal handlers. Returns 0 or SW_ERR_INVALID.
int sw_capture_self(sw_stack_t *out, uint32_t max_frames);

/// Sets the Swift task-local whose value (a UInt64 request tag) every handler capture records in
/// sw_stack_t.request_tag: the address of a `TaskLocal<UInt64>` object. NULL stops the reading.
void sw_request_key_set(const void *key);

/// The calling thread's request tag, as a handler reads it (for tests). async-signal-safe.
uint64_t sw_request_tag_read(void);

// ---- the request tag of a thread blocked in a system call (blocked_task.c) -----------------
// Learned at run time (glibc's and the Swift runtime's private layouts), never compiled in.
// Not for signal handlers.

/// One observation of the calling thread's descriptor layout (a second thread confirms it).
void sw_thread_layout_observe(void);

/// One observation of the running task, called inside two nested bindings of the request
/// task-local (sw_request_key_set): `outer`, then `inner`. Returns sw_blocked_tag_state: 1 when
/// the thread and task layouts are both known, 0 while more observations are needed, -1 on failure.
int sw_task_layout_observe(uint64_t outer, uint64_t inner);

/// 1 when blocked threads' tags are readable, 0 while still learning, -1 when learning failed
/// (`*why`, when not NULL, receives a static sentence saying why).
int sw_blocked_tag_state(const char **why);

/// The request tag of thread `tid`, blocked in the system call `sc` describes (from
/// sw_thread_syscall), read from its task without a signal; 0 when none, unknown, or when the
/// thread left that call or ran while it was read.
uint64_t sw_blocked_request_tag(int32_t tid, const sw_thread_syscall_t *sc);

/// Reads tried, tags found, and tags discarded because the thread moved meanwhile.
void sw_blocked_tag_stats(uint64_t *reads, uint64_t *tagged, uint64_t *discarded);

/// Counters for tests and benchmarks.
typedef struct sw_sampler_stats {
    uint64_t handled;        ///< handler invocations that answered a live request
    uint64_t late;           ///< handler invocations for abandoned or unknown requests
    uint64_t chained;        ///< signals passed to a previous handler
    uint64_t timeouts;       ///< requests abandoned at their deadline
    uint64_t park_timeouts;  ///< parked threads that left on their own deadline
    uint64_t cut_at_unmapped; ///< walks stopped where the kernel said the stack's mapping now ends
    uint64_t unverified;     ///< bound checks the kernel refused to answer (seccomp): table bounds only
    /// Captures whose stack bound was asked of the kernel (mincore) in the handler: only stacks not
    /// below their thread pointer (the main thread, coroutine stacks); 0 for ordinary threads.
    uint64_t kernel_bound_checks;
    /// Capture requests signalled to a thread (each one signal, whatever became of it): what the
    /// process's requesters, the watchdog first, cost the threads they interrupt.
    uint64_t sent;
} sw_sampler_stats_t;

void sw_sampler_stats(sw_sampler_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif
