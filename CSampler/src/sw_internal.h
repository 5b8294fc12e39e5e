// Internal to CSampler: the memory-map table, the stack walkers and the off-thread unwinder.
#ifndef SW_INTERNAL_H
#define SW_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "sw_arch.h"
#include "sw_capture.h"

// ---- memory-map table (maps.c) ------------------------------------------------------------
// Built outside handlers from /proc/self/maps; read by handlers under a sequence lock so that a
// handler never trusts bounds that were being rewritten while it read them.

enum { SW_MAP_READ = 1, SW_MAP_WRITE = 2, SW_MAP_EXEC = 4 };

/// Rebuilds the table. Serialized by a mutex. Not for handlers.
int sw_maps_rebuild(void);
/// The same, giving up with SW_ERR_TIMED_OUT rather than waiting past `deadline_ns`
/// (CLOCK_MONOTONIC) for another thread's rebuild.
int sw_maps_rebuild_until(int64_t deadline_ns);

/// The mapping [lo, hi) containing `addr` with all of `need` permission bits; 0 when none or when
/// the table was being rewritten. async-signal-safe: reads static memory only, no locks.
int sw_maps_find(uint64_t addr, int need, uint64_t *lo, uint64_t *hi);

/// 1 when `addr` is inside an executable mapping. async-signal-safe.
int sw_maps_is_exec(uint64_t addr);

/// Generation of the table (changes on every rebuild).
uint64_t sw_maps_generation(void);
// Whether the map table was read after a thread that started at `start_ticks` (clock ticks since
// boot, /proc stat field 22) did, and so holds its stack. Not for handlers.
int sw_maps_hold_thread_started(uint64_t start_ticks);

/// How often a map table outgrew its block and got a bigger one (tests).
uint64_t sw_maps_grown(void);

// ---- this process's own memory, asked of the kernel (own_memory.c) ----------------------------

/// End of the longest prefix of [from, to) that is mapped now (from rounded down to a page), asked
/// of the kernel with mincore. When the kernel will not answer (seccomp), `to`, counted in
/// sw_mapped_unverified_count. async-signal-safe (system calls only; 512 bytes of stack).
uint64_t sw_mapped_end(uint64_t from, uint64_t to);
uint64_t sw_mapped_unverified_count(void);

/// Copies [src, src + len) of this process with process_vm_readv: an unmapped page gives a short
/// read (bytes copied returned, 0 on error) instead of a fault. async-signal-safe (a system call).
size_t sw_read_own(void *dst, uint64_t src, size_t len);

// ---- frame-pointer walk (fp_walk.c) ---------------------------------------------------------

/// Walks the frame-record chain starting at `fp`, appending return addresses to `out`.
/// Every link is checked: inside [lo, hi), strictly increasing, 8-byte aligned; bit 60 (Swift
/// async frames) masked. Returns 1 when it stopped on a bad link or on `cap`, 0 on a clean end.
/// async-signal-safe: reads only inside [lo, hi), calls nothing.
int sw_fp_walk(uint64_t fp, uint64_t lo, uint64_t hi, uint64_t *out, uint32_t *count, uint32_t cap);

// Swift async frames set bit 60 of a saved frame pointer (the swift_async_extendedFramePointer
// convention): the record's address is the value without it.
#define SW_ASYNC_FP_BIT (1ULL << 60)

// ---- Swift async call chains (async_chain.c; the walk's part is sw_async_chain.h) -------------

/// The return address the concurrency runtime's job runner leaves when it calls a task's resume
/// function, learnt by sw_async_learn; 0 until then. A frame record holding it belongs to an async
/// function, whose context sits just below the record. Written once; walks read it relaxed.
extern _Atomic uint64_t g_sw_async_resume_ra;

/// Set by a walk whose async context lay in no mapping of the map table: the task allocator may
/// have mapped memory since the table was read. async-signal-safe (one atomic store).
extern _Atomic int g_sw_async_maps_stale;

/// Rebuilds the map table when a walk found it stale for an async context, at most once a second
/// (a context that is in no mapping at all would otherwise ask on every call). Not for handlers:
/// the readers of handlers' results call it (the ring's drain, a request's requester).
void sw_async_refresh_maps_if_stale(void);

// Cookies in si_value tell our signals apart: capture requests ("SW") and ring ticks ("SR").
#define SW_RING_COOKIE_MAGIC 0x5352ULL
/// On functions that read another frame's raw stack memory (frame walks, the handler's stack
/// copy): the words they read belong to frames with their own AddressSanitizer redzones, which
/// are not errors of ours. Without it, any ASan-built program using Stallwatch aborts.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SW_RAW_STACK_READER __attribute__((no_sanitize("address")))
#endif
#endif
#ifndef SW_RAW_STACK_READER
#define SW_RAW_STACK_READER
#endif

/// Copies `bytes` (a multiple of 8) of raw stack word by word, unchecked by sanitizers.
/// async-signal-safe.
SW_RAW_STACK_READER static inline void sw_copy_raw_words(void *dst, uint64_t src, uint64_t bytes) {
    uint64_t *d = (uint64_t *)dst;
    // volatile: the compiler must not turn this into a memcpy call, which ASan intercepts.
    const volatile uint64_t *s = (const volatile uint64_t *)(uintptr_t)src;
    for (uint64_t i = 0; i < bytes / 8; i++) d[i] = s[i];
}

/// Top 16 bits of a request cookie (request_slots.c); the handler routes it to sw_capture_answer.
#define SW_COOKIE_MAGIC 0x5357ULL

/// Answers the capture request `cookie` from inside the signal handler. async-signal-safe.
void sw_capture_answer(uint64_t cookie, const void *ucv);

// ---- the sampling signal (signal_owner.c: a leaf; signal_handler.c: the handler) ---------------
#include <signal.h>
#include <sys/types.h>

typedef void (*sw_signal_handler_fn)(int, siginfo_t *, void *);

/// The handler: dispatches our requests and ticks, chains the rest. async-signal-safe.
void sw_signal_handler(int sig, siginfo_t *si, void *uc);

/// Takes `signo` for `handler` after `prime` (run under the install lock, outside any handler)
/// succeeded; an existing handler is kept for chaining unless `allow_chain` is 0.
int sw_signal_own(int signo, int allow_chain, sw_signal_handler_fn handler, int (*prime)(void));
/// SW_HANDLER_*: whether `handler` still holds the signal.
int sw_signal_state(sw_signal_handler_fn handler);
/// Installs `handler` again after somebody replaced it, chaining to theirs.
int sw_signal_reclaim(sw_signal_handler_fn handler);
/// Passes a signal that is not ours to the handler installed before. async-signal-safe.
void sw_signal_chain(int sig, siginfo_t *si, void *uc);

/// The pid request signals are sent to and accepted from (refreshed in a forked child).
pid_t sw_signal_owner_pid(void);

/// Signals passed on to the handler that was installed before ours.
uint64_t sw_signal_chained_count(void);

// ---- handler-side capture (stack_fill.c) -----------------------------------------------------

/// Where reads above `sp` must stop: `hi` (the end of SP's mapping in the table), at most 2 MiB
/// above SP, cut at the first page that is unmapped now. async-signal-safe.
uint64_t sw_readable_stack_end(uint64_t sp, uint64_t hi);

/// Captures whose walk stopped at a page unmapped since the table was read.
uint64_t sw_stack_fill_cut_count(void);

/// Binds the task-local lookup's PLT slot outside any handler (request_tag.c).
void sw_request_tag_prime(void);

/// The request task-local's key (sw_request_key_set), NULL before it is set (request_tag.c).
const void *sw_request_key(void);

/// A thread's stack mapping as the map table gave it ([lo, end) for table generation `gen`), kept
/// between captures of the same thread so the handler skips the table lookup, and `readable`: where
/// the last capture's reads had to stop (the thread's own allocation, or what the kernel said).
/// Frames a root memo keeps (a thread's outermost frames through unwind tables: libc's
/// start_thread and clone3, or __libc_start_main and _start).
#define SW_ROOT_MEMO_FRAMES 4

/// The last walk's run of unwind-table frames up to the thread's root, kept per thread: the next
/// walk that stands at the same PC, SP and FP replays it after checking that every return address
/// still sits in its slot, instead of finding each frame's module and table row again (their cold
/// cache lines were a third of a ring sample's handler time). Only frames of objects without frame
/// pointers whose rows locate the CFA from SP are kept: their walk depends on nothing but the PC,
/// the SP and the slots checked. `gen` is the memory-map table's generation it was learnt under
/// (0: none).
typedef struct sw_root_memo {
    uint64_t pc, sp, fp, gen;
    uint32_t count;
    uint64_t frames[SW_ROOT_MEMO_FRAMES];
    uint64_t slots[SW_ROOT_MEMO_FRAMES];    ///< where each frame's return address was read
    uint64_t raw[SW_ROOT_MEMO_FRAMES];      ///< the word read there (before pointer authentication is stripped)
} sw_root_memo_t;

/// The loaded object that held the thread's last interrupted PC, as _dl_find_object gave it: the
/// next capture whose PC falls inside it asks the unwind-table row cache first with this object as
/// the key, and skips the object lookup (glibc's cold lines, a sixth of a ring sample's time) when
/// the row is there. Nothing of the object is ever read through it: a hint left by a library that
/// has been unloaded since only misses the cache. start == end: none.
typedef struct sw_leaf_hint {
    uint64_t start, end, hdr;
} sw_leaf_hint_t;

/// Parent contexts of the thread's last async chain kept for the next walk to prefetch.
#define SW_ASYNC_HINT_CONTEXTS 12

/// The mappings that held the thread's last async contexts and its last resume function outside
/// the async function's own object (the runtime's, which ends every chain), from the map table of
/// generation `gen`: the next chain looks there first instead of searching the table. Only bounds,
/// from the same table a search would give. gen 0: none.
/// `parents` are the last chain's parent contexts, innermost first: the next walk of the same
/// thread asks for all of them at once before it reads the chain link by link. Addresses to
/// prefetch only, never read through: a stale one costs a wasted prefetch, not a wrong frame.
typedef struct sw_async_hint {
    uint64_t gen, lo, hi, code_lo, code_hi;
    uint64_t parents[SW_ASYNC_HINT_CONTEXTS];
    uint32_t parent_count;
} sw_async_hint_t;

// A chain's contexts are dependent loads, and mostly far apart (a 5-deep chain in `bench sampler`
// spans ~580 KB of heap: the allocator's slabs), so each one read cold is a miss of its own:
// ~300 cycles a link there, 5/6 of the chain's time (rdtsc around the reads). A thread sampled
// again mostly still runs the same chain: the handler asks for the last walk's parent contexts all
// at once as it starts, so their misses overlap each other and the machine-stack walk instead of
// coming one after another. Only a prefetch (it never faults): the walk still reads every link.
// async-signal-safe, no system call.
static inline void sw_async_hint_prefetch(const sw_async_hint_t *hint) {
    uint32_t count = hint->parent_count < SW_ASYNC_HINT_CONTEXTS ? hint->parent_count : SW_ASYNC_HINT_CONTEXTS;
    for (uint32_t i = 0; i < count; i++) __builtin_prefetch((const void *)(uintptr_t)hint->parents[i], 0, 3);
}

typedef struct sw_stack_bounds {
    uint64_t lo, end, gen, readable;
    sw_leaf_hint_t leaf;
    sw_async_hint_t async;
    sw_root_memo_t root;
} sw_stack_bounds_t;

/// Fills `st` from the interrupted context `ucv` (a ucontext_t): PC, SP, and for frame pointers the
/// walk. `bounds` (may be NULL) remembers the thread's stack mapping between captures of the same
/// thread. No system call for a thread whose stack lies below its thread pointer. async-signal-safe.
void sw_capture_fill(sw_stack_t *st, const void *ucv, sw_unwinder_t unwinder, uint32_t max_frames,
                     sw_stack_bounds_t *bounds);

/// sw_capture_fill for the timer ring's handler: frame-pointer walk only, and no system call at all.
/// A stack not below the thread pointer and not the main thread's gives its PC only. async-signal-safe.
void sw_capture_fill_nosys(sw_stack_t *st, const void *ucv, uint32_t max_frames, sw_stack_bounds_t *bounds);

/// Ring samples that kept the PC only (their stack's end could not be known without the kernel).
uint64_t sw_stack_fill_pc_only_count(void);

/// Captures whose readable end was asked of the kernel (a stack not below its thread pointer).
uint64_t sw_stack_bounds_checks(void);

/// 1 when `tid` keeps `signo` blocked over a few readings, 0 when not, SW_ERR_THREAD_GONE.
/// Not for handlers (reads /proc, sleeps up to 6.2 ms).
int sw_signal_blocked_by(int32_t tid, int signo);

/// The ring handler (ring.c). async-signal-safe.
void sw_ring_on_signal(uint64_t cookie, const void *ucv);

/// The walk from an interrupted context: the PC, then the frame-record chain. Where a leaf's caller
/// lives on the stack (x86_64), the words between SP and the first record go to `leaf_words` for
/// sw_recover_leaf_caller; elsewhere (arm64: in LR) none are copied here. async-signal-safe.
int sw_fp_walk_context(uint64_t pc, uint64_t sp, uint64_t fp, uint64_t hi, uint64_t *out, uint32_t *count,
                       uint32_t cap, uint64_t *leaf_words, uint8_t *leaf_count);

/// Outside any handler: when the interrupted function was a frameless leaf, inserts its caller
/// (the first of the copied leaf words — stack words on x86_64, LR on arm64 — that is a return
/// address, checked with fault-safe reads of the code before it) as frame 1. Frame-pointer stacks
/// only; idempotent per stack.
void sw_recover_leaf_caller(sw_stack_t *st);

// ---- the hybrid walk: frame records and unwind tables (unwind_walk.c) -------------------------

/// Registers a walk starts from. Without a known frame pointer (a blocked thread: the kernel tells
/// only PC and SP) the walk goes as far as the unwind tables take it and stops with SW_STOP_NEED_FP.
typedef struct sw_walk_regs {
    uint64_t pc, sp, fp, lr;
    uint8_t fp_known, lr_known;
} sw_walk_regs_t;

/// The stack a walk may read: [lo, hi), live, or from `copy` holding the bytes from `base` on.
/// `guard_tables`: the walk runs off the sampled thread, after it (a perf sample, a blocked thread
/// read from outside), and the thread may since have dlclosed an object on its stack: unwind
/// tables are read through fault-safe copies (see sw_cfi_find_row).
typedef struct sw_walk_mem {
    uint64_t lo, hi;
    const uint8_t *copy;
    uint64_t base;
    uint8_t guard_tables;
    /// With guard_tables: the caller's deadline (CLOCK_MONOTONIC ns; 0 none). Fault-safe table reads
    /// are a system call each (~20 per frame): under load a walk can outlast the capture's bound,
    /// so it stops there (SW_STOP_TIMED_OUT) with the frames it has.
    int64_t deadline_ns;
    /// The live walk only (the handler's): the thread's root memo to replay and to update, and the
    /// map table's generation it must match. NULL elsewhere.
    sw_root_memo_t *root;
    uint64_t root_gen;
    /// The live walk only: the thread's leaf hint, read and updated at frame 0. NULL elsewhere.
    sw_leaf_hint_t *leaf;
    /// The live walk only: the thread's async-context hint, read and updated by its chain. NULL elsewhere.
    sw_async_hint_t *async;
} sw_walk_mem_t;

/// Stops only sw_walk reports, never stored in a stack.
enum {
    SW_STOP_NO_ROW_AT_PC = 100, ///< the interrupted PC has no unwind-table row: use frame records
    SW_STOP_NEED_FP = 101,      ///< the next row needs the frame pointer, which is not known
};

typedef struct sw_walk_result {
    uint8_t stop;               ///< SW_STOP_*
    uint8_t frame0_by_table;    ///< the interrupted frame was unwound by its table row (exact)
    uint32_t table_frames, fp_frames;
    uint64_t pc, sp;            ///< where the walk stood when it stopped
    uint16_t async_at;          ///< as sw_stack_t's: the async frames the walk added (first chain only)
    uint8_t async_count;
    uint8_t async_end;          ///< SW_ASYNC_*
    uint64_t async_ctx;         ///< as sw_stack_t's
} sw_walk_result_t;

// The Swift runtime's calling convention where the compiler knows it (clang); for the runtime
// functions called here (pointer or no argument, a pointer or integer result) it passes and
// returns in the same registers as C on x86_64 and arm64.
#if defined(__clang__) && defined(__has_attribute)
#if __has_attribute(swiftcall)
#define SW_SWIFTCALL __attribute__((swiftcall))
#endif
#endif
#ifndef SW_SWIFTCALL
#define SW_SWIFTCALL
#endif

/// The task the interrupted thread runs (sw_task.c): its id and current priority into `st`, 0 and
/// 0 when it runs none. async-signal-safe; for handlers on the sampled thread only.
void sw_task_identity_read(sw_stack_t *st);
/// Binds the getters sw_task_identity_read calls (their PLT slots), outside any handler.
void sw_task_identity_prime(void);

/// Copies a walk's async frames into `st` unless it has some already (a walk resumed after a first
/// one). async-signal-safe.
static inline void sw_stack_take_async(sw_stack_t *st, const sw_walk_result_t *res) {
    if (st->async_end != SW_ASYNC_NONE || res->async_end == SW_ASYNC_NONE) return;
    st->async_at = res->async_at;
    st->async_count = res->async_count;
    st->async_end = res->async_end;
    st->async_ctx = res->async_ctx;
}

/// Clears `st`'s async frames (a capture's start). async-signal-safe.
static inline void sw_stack_clear_async(sw_stack_t *st) {
    st->async_at = 0;
    st->async_count = 0;
    st->async_end = SW_ASYNC_NONE;
    st->async_ctx = 0;
}

/// Frames one walk may unwind through tables: bounds the handler's time (a table row costs
/// ~0.1-0.3 µs, a frame record ~1 ns).
#define SW_WALK_MAX_TABLE_FRAMES 96

/// Walks from `regs` (outer = 0: regs.pc is the interrupted PC and is appended first; 1: it is a
/// return address already in `out`). Returns 0 when it reached the root. async-signal-safe.
/// Picks sw_walk_guarded or sw_walk_live by mem->guard_tables; handlers call sw_walk_live.
int sw_walk(const sw_walk_regs_t *regs, const sw_walk_mem_t *mem, int outer, uint64_t *out, uint32_t *count,
            uint32_t cap, sw_walk_result_t *res);

/// sw_walk for a handler on the sampled thread: tables read in place, mem->guard_tables ignored.
/// async-signal-safe, and no system call.
int sw_walk_live(const sw_walk_regs_t *regs, const sw_walk_mem_t *mem, int outer, uint64_t *out, uint32_t *count,
                 uint32_t cap, sw_walk_result_t *res);
/// sw_walk off the sampled thread: fault-safe table reads, mem->deadline_ns honoured.
int sw_walk_guarded(const sw_walk_regs_t *regs, const sw_walk_mem_t *mem, int outer, uint64_t *out,
                    uint32_t *count, uint32_t cap, sw_walk_result_t *res);

// ---- off-thread libunwind (remote_unwind.c) -------------------------------------------------

/// Registers and stack captured by a handler for an unwind done later, outside the handler.
typedef struct sw_regs {
    uint64_t r[SW_ARCH_UNW_REGS]; ///< in libunwind's numbering for this architecture (sw_arch.h)
} sw_regs_t;

/// A stack region the unwinder may read: either a copy (copy != NULL) or the live stack of a
/// thread held still in its handler (copy == NULL).
typedef struct sw_stack_view {
    const sw_regs_t *regs;
    const uint8_t *copy;     ///< bytes of [base, base + len) copied by the handler, or NULL
    uint64_t base;
    uint64_t len;
    uint64_t live_lo, live_hi; ///< live-readable stack range when copy == NULL
} sw_stack_view_t;

/// Prepares libunwind's address space (allocates): call once outside any handler.
int sw_remote_unwind_init(void);

/// Unwinds with libunwind from `view`, appending frames to `out`. Not for handlers.
int sw_remote_unwind(const sw_stack_view_t *view, sw_stack_t *out, uint32_t max_frames, int64_t deadline_ns);

// ---- the watchdog's sleep -------------------------------------------------------------------

/// Wakes watchdogs that sleep in a loop-rest set (loop_rest.c); called after every generation bump
/// that wakes waiters (pool_wake.c). Not for handlers.
void sw_loop_rest_kick(void);

// ---- enqueue stamps (job_stamps.c) ---------------------------------------------------------

/// Stamps `job`'s enqueue while stamping is on (the enqueue hook calls it). Not for handlers.
void sw_job_stamp_note(const void *job);

// ---- time -----------------------------------------------------------------------------------

/// CLOCK_MONOTONIC in ns. async-signal-safe (vDSO clock_gettime).
static inline int64_t sw_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
