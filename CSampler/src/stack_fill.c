// What a handler records about the thread it interrupted: the PC, the SP and, for frame pointers,
// the checked walk. Shared by request answers (request_slots.c) and timer ticks (ring.c).
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_internal.h"
#include "sw_threads.h"
#include "sw_unwind_table.h"

#include <unistd.h>

// A frame record further than this above SP is not read: the kernel is asked about the whole
// range in one question (mincore) on every capture, and a chain of max_frames records that
// spans more than this is not a stack a person reads anyway.
#define SW_WALK_SPAN (2ULL * 1024 * 1024)

// Captures whose stack mapping turned out shorter than the table said (it changed since the table
// was read): the walk stopped there instead of faulting.
static _Atomic uint64_t g_cut_at_unmapped;

// async-signal-safe: the bound of every read is the SP's own mapping from the table, cut at the
// first page the kernel says is unmapped now (the table may be older than the mapping).
uint64_t sw_readable_stack_end(uint64_t sp, uint64_t hi) {
    uint64_t want = hi - sp > SW_WALK_SPAN ? sp + SW_WALK_SPAN : hi;
    return sw_mapped_end(sp, want);
}

static _Atomic uint64_t g_bounds_checks;

uint64_t sw_stack_bounds_checks(void) {
    return atomic_load_explicit(&g_bounds_checks, memory_order_relaxed);
}

// The main thread's stack: an address inside it, taken by a constructor that runs on the main
// thread. The kernel never unmaps the main stack's mapping and everything between SP and its top is
// mapped, so its readable end is the table's end of that mapping with no question to the kernel.
static uint64_t g_main_stack_addr;

__attribute__((constructor)) static void note_main_stack(void) {
    volatile uint64_t here = 0;
    if (getpid() == sw_gettid()) g_main_stack_addr = (uint64_t)(uintptr_t)&here;
}

// Where the prologue of a capture left things.
enum { FILL_DONE = 0, FILL_WALK = 1, FILL_ASK_KERNEL = 2 };

// async-signal-safe, no system call: PC, SP and the stack's mapping; for a stack below the thread
// pointer or the main thread's stack, the readable end (*end). FILL_ASK_KERNEL: any other stack
// (an alternate signal stack, a coroutine's), whose end only the kernel can tell.
SW_RAW_STACK_READER static int fill_prologue(sw_stack_t *st, const ucontext_t *uc, sw_unwinder_t unwinder,
                                             sw_stack_bounds_t *bounds, uint64_t *hi_out, uint64_t *end) {
    uint64_t pc = sw_arch_pc(uc), sp = sw_arch_sp(uc);
    if (bounds != NULL && unwinder != SW_UNWIND_NONE) sw_async_hint_prefetch(&bounds->async);
    st->frames[0] = pc;
    st->count = 1;
    st->sp = sp;
    st->truncated = 0;
    st->unwinder = (uint8_t)unwinder;
    st->leaf_word_count = 0;
    st->table_frames = 0;
    sw_stack_clear_async(st);
    st->stop_reason = SW_STOP_NOT_WALKED;
    st->driver = SW_DRIVER_SIGNAL;
    st->request_tag = sw_request_tag_read();
    st->task_id = 0;
    st->task_priority = 0;
    if (unwinder == SW_UNWIND_NONE) {
        st->stack_known = 1; // nothing to bound: the floor takes the PC only
        return FILL_DONE;
    }
    uint64_t gen = sw_maps_generation();
    uint64_t lo = 0, hi = 0;
    if (bounds != NULL && bounds->gen == gen && sp >= bounds->lo && sp < bounds->end) {
        // The table's answer for this thread, kept: its cold cache lines were most of a handler's time.
        lo = bounds->lo;
        hi = bounds->end;
        st->stack_known = 1;
    } else {
        st->stack_known = (uint8_t)sw_maps_find(sp, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi);
        if (st->stack_known && bounds != NULL) {
            bounds->lo = lo;
            bounds->end = hi;
            bounds->gen = gen;
        }
    }
    *hi_out = hi;
    if (!st->stack_known) {
        if (unwinder == SW_UNWIND_FRAME_POINTER) {
            st->truncated = 1;
            st->stop_reason = SW_STOP_STACK_UNKNOWN;
        }
        return FILL_DONE;
    }
    uint64_t tp = sw_arch_thread_pointer();
    uint64_t main = g_main_stack_addr;
    if ((tp > sp && tp <= hi) || (main != 0 && main >= lo && main < hi)) {
        uint64_t top = tp > sp && tp <= hi ? tp : hi;
        *end = top - sp > SW_WALK_SPAN ? sp + SW_WALK_SPAN : top;
        if (bounds != NULL) bounds->readable = *end;
        return FILL_WALK;
    }
    return FILL_ASK_KERNEL;
}

// async-signal-safe, no system call: the walk of [sp, end) once its end is known.
SW_RAW_STACK_READER static void fill_walk(sw_stack_t *st, const ucontext_t *uc, uint32_t max_frames, uint64_t end,
                                          sw_stack_bounds_t *bounds) {
    uint64_t pc = st->frames[0], sp = st->sp;
    // Frame records where the code keeps them, the unwind table where it does not, and the table
    // for the interrupted frame itself (a leaf, a prologue): exact where a guess was made before.
    sw_walk_regs_t regs = {.pc = pc, .sp = sp, .fp = sw_arch_fp(uc), .lr = sw_arch_lr(uc), .fp_known = 1,
                           .lr_known = SW_ARCH_LEAF_CALLER_IN_LR};
    sw_walk_mem_t mem = {.lo = sp, .hi = end, .copy = NULL, .base = 0, .guard_tables = 0,
                         .root = bounds != NULL && bounds->gen != 0 ? &bounds->root : NULL,
                         .root_gen = bounds != NULL ? bounds->gen : 0, .leaf = bounds != NULL ? &bounds->leaf : NULL,
                         .async = bounds != NULL ? &bounds->async : NULL};
    sw_walk_result_t res = {0};
    st->count = 0;
    sw_walk_live(&regs, &mem, 0, st->frames, &st->count, max_frames, &res);
    st->table_frames = (uint8_t)(res.table_frames > 255 ? 255 : res.table_frames);
    sw_stack_take_async(st, &res);
    if (res.stop == SW_STOP_NO_ROW_AT_PC) {
        // No table for the interrupted code (generated code, a stub): frame records from FP, and
        // the words above SP kept for sw_recover_leaf_caller's checked guess at a leaf's caller.
        // Only the first record is taken from FP: above it the walk is the hybrid one again, or
        // the first function without frame pointers further up (libc under a PLT stub) ends it.
        uint64_t fp0 = sw_arch_fp(uc) & ~SW_ASYNC_FP_BIT;
        st->truncated = (uint8_t)sw_fp_walk_context(pc, sp, fp0, end, st->frames, &st->count,
                                                    max_frames < 2 ? max_frames : 2, st->leaf_words,
                                                    &st->leaf_word_count);
        st->stop_reason = !st->truncated ? SW_STOP_ROOT
                          : st->count >= max_frames ? SW_STOP_FRAME_LIMIT : SW_STOP_BAD_LINK;
        if (st->count == 2 && max_frames > 2 && fp0 >= sp && fp0 + 16 <= end && (fp0 & 7) == 0) {
            sw_walk_regs_t up = {.pc = st->frames[1], .sp = fp0 + 16,
                                 .fp = *(const uint64_t *)(uintptr_t)fp0, .fp_known = 1};
            sw_walk_result_t more = {0};
            sw_walk_live(&up, &mem, 1, st->frames, &st->count, max_frames, &more);
            st->table_frames = (uint8_t)(more.table_frames > 255 ? 255 : more.table_frames);
            sw_stack_take_async(st, &more);
            st->stop_reason = more.stop == SW_STOP_NEED_FP ? SW_STOP_BAD_LINK : more.stop;
            st->truncated = st->stop_reason != SW_STOP_ROOT;
        }
#if SW_ARCH_LEAF_CALLER_IN_LR
        // Only the interrupted function knows whether LR is its caller (a leaf, or a prologue before
        // the record is linked) or a stale return from its own last call: sw_recover_leaf_caller
        // decides outside the handler, where reading code is safe.
        st->leaf_words[0] = sw_arch_code_address(sw_arch_lr(uc));
        st->leaf_word_count = 1;
#endif
    } else {
        st->stop_reason = res.stop == SW_STOP_NEED_FP ? SW_STOP_BAD_LINK : res.stop;
        st->truncated = st->stop_reason != SW_STOP_ROOT;
    }
}

// async-signal-safe: reads only the context and the stack above SP, inside the mapping that holds
// it. It runs on the interrupted thread itself, so the thread pointer is that thread's: glibc puts
// the thread's descriptor at the top of its stack allocation (its own or one the program gave
// pthread_create), and everything between SP and it belongs to the live thread, mapped until it
// exits — reads are bounded there without asking the kernel. The main thread's stack is never
// unmapped either. Only another stack (a coroutine's, a signal stack) is checked with the kernel
// (mincore): the request path's one system call besides the answer.
SW_RAW_STACK_READER void sw_capture_fill(sw_stack_t *st, const void *ucv, sw_unwinder_t unwinder, uint32_t max_frames,
                     sw_stack_bounds_t *bounds) {
    const ucontext_t *uc = ucv;
    uint64_t hi = 0, end = 0;
    int next = fill_prologue(st, uc, unwinder, bounds, &hi, &end);
    if (next == FILL_DONE) return;
    if (next == FILL_ASK_KERNEL) {
        uint64_t sp = st->sp;
        end = sw_readable_stack_end(sp, hi);
        atomic_fetch_add_explicit(&g_bounds_checks, 1, memory_order_relaxed);
        if (end < hi && end - sp < SW_WALK_SPAN) atomic_fetch_add_explicit(&g_cut_at_unmapped, 1, memory_order_relaxed);
        if (bounds != NULL) bounds->readable = end;
    }
    if (unwinder != SW_UNWIND_FRAME_POINTER) return;
    fill_walk(st, uc, max_frames, end, bounds);
    // The walk met the job runner: the thread runs a task, named here where it is current (the
    // timer ring names it in its first sample only: see sw_ring_on_signal).
    if (st->async_end != SW_ASYNC_NONE) sw_task_identity_read(st);
}

static _Atomic uint64_t g_ring_pc_only;

uint64_t sw_stack_fill_pc_only_count(void) {
    return atomic_load_explicit(&g_ring_pc_only, memory_order_relaxed);
}

// async-signal-safe, and no system call at all (the timer ring's handler): a stack whose readable
// end only the kernel could tell (not below the thread pointer, not the main thread's) gives its
// PC only, stopped with SW_STOP_STACK_UNKNOWN, and is counted (sw_stack_fill_pc_only_count).
SW_RAW_STACK_READER void sw_capture_fill_nosys(sw_stack_t *st, const void *ucv, uint32_t max_frames,
                                               sw_stack_bounds_t *bounds) {
    const ucontext_t *uc = ucv;
    uint64_t hi = 0, end = 0;
    int next = fill_prologue(st, uc, SW_UNWIND_FRAME_POINTER, bounds, &hi, &end);
    if (next == FILL_DONE) return;
    if (next == FILL_ASK_KERNEL) {
        st->truncated = 1;
        st->stop_reason = SW_STOP_STACK_UNKNOWN;
        atomic_fetch_add_explicit(&g_ring_pc_only, 1, memory_order_relaxed);
        return;
    }
    fill_walk(st, uc, max_frames, end, bounds);
}

uint64_t sw_stack_fill_cut_count(void) {
    return atomic_load_explicit(&g_cut_at_unmapped, memory_order_relaxed);
}

// Not for handlers: the caller's own stack, walked from its own frame. Reads stay inside the
// mapping that holds the caller's SP, checked with the kernel like a handler's.
int sw_capture_self(sw_stack_t *out, uint32_t max_frames) {
    if (out == NULL || max_frames == 0) return SW_ERR_INVALID;
    if (max_frames > SW_MAX_FRAMES) max_frames = SW_MAX_FRAMES;
    uint64_t fp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    uint64_t sp = fp; // everything this function reads lies above its own frame record
    out->count = 0;
    out->unwinder = SW_UNWIND_FRAME_POINTER;
    out->truncated = 0;
    out->leaf_word_count = 0;
    out->leaf_caller_recovered = 0;
    sw_stack_clear_async(out);
    out->tid = sw_gettid();
    out->sp = sp;
    out->handler_ns = 0;
    out->latency_ns = 0;
    out->taken_at_ns = (uint64_t)sw_now_ns();
    out->request_tag = sw_request_tag_read();
    out->task_id = 0;
    out->task_priority = 0;
    uint64_t lo = 0, hi = 0;
    if (!sw_maps_find(sp, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi)) {
        sw_maps_rebuild();
        if (!sw_maps_find(sp, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi)) {
            out->stack_known = 0;
            out->truncated = 1;
            out->stop_reason = SW_STOP_STACK_UNKNOWN;
            return 0;
        }
    }
    out->stack_known = 1;
    out->truncated = (uint8_t)sw_fp_walk(fp, sp, sw_readable_stack_end(sp, hi), out->frames, &out->count, max_frames);
    out->stop_reason = !out->truncated ? SW_STOP_ROOT
                       : out->count >= max_frames ? SW_STOP_FRAME_LIMIT : SW_STOP_BAD_LINK;
    out->table_frames = 0;
    return 0;
}

#endif // SW_PLATFORM_SAMPLES
