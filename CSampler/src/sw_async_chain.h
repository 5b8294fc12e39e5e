// The walk's part of Swift async call chains (sw_async.h): from the context of the async function
// the runtime's job runner called, through each context's parent, to the task's first one.
// Included by unwind_walk.c once per version of the walk, with SW_ASYNC_CHAIN_NAME and
// SW_ASYNC_PAIR defined: two functions, not a flag, so that the handler's call graph, which
// scripts/check-handler-safety.py reads from the objects, holds no system call.
#ifndef SW_ASYNC_CHAIN_READERS
#define SW_ASYNC_CHAIN_READERS

#include "sw_internal.h"

// Two words of a context: [parent, resume function]. Contexts live in the task's allocator (heap),
// not on the stack. async-signal-safe, no system call: only inside a readable, writable mapping
// of the map table ([*lo, *hi) caches the last one: a task's contexts share few mappings). The
// chain read is the interrupted task's own, in use while it is interrupted: nothing frees it.
SW_RAW_STACK_READER static inline int sw_async_pair_live(uint64_t a, uint64_t *lo, uint64_t *hi, uint64_t w[2]) {
    if ((a & 7) != 0) return 0;
    if (a < *lo || a + 16 > *hi || a + 16 < a) {
        if (!sw_maps_find(a, SW_MAP_READ | SW_MAP_WRITE, lo, hi)) {
            atomic_store_explicit(&g_sw_async_maps_stale, 1, memory_order_relaxed);
            return 0;
        }
        if (a + 16 > *hi) return 0;
    }
    const volatile uint64_t *p = (const volatile uint64_t *)(uintptr_t)a;
    w[0] = p[0];
    w[1] = p[1];
    return 1;
}

// The same off the sampled thread (a perf sample's copy, a blocked thread): the thread may have
// moved on, so the words are read through the kernel (a short read, never a fault).
// async-signal-safe (a system call).
static inline int sw_async_pair_guarded(uint64_t a, uint64_t *lo, uint64_t *hi, uint64_t w[2]) {
    (void)lo;
    (void)hi;
    if ((a & 7) != 0) return 0;
    return sw_read_own(w, a, 16) == 16;
}

// async-signal-safe, no system call: a resume function must be code. [lo, hi) is the async
// function's object, where most of a chain's resume functions are; [*olo, *ohi) caches the last
// executable mapping outside it (the runtime's, whose function ends every chain).
static inline int sw_async_is_code(uint64_t pc, uint64_t lo, uint64_t hi, uint64_t *olo, uint64_t *ohi) {
    if (pc >= lo && pc < hi) return 1;
    if (pc >= *olo && pc < *ohi) return 1;
    return sw_maps_find(pc, SW_MAP_EXEC, olo, ohi);
}

// A task's contexts come from its own stack-like allocator, so a caller's context lies below its
// callee's, most often in the same slab: the lines below the first context are asked for at once,
// and the chain's dependent loads then mostly find them in cache instead of missing one by one.
// A prefetch never faults, mapped or not. No-op off the sampled thread (its reads are copies).
#define SW_ASYNC_PREFETCH_LINES 8
static inline void sw_async_prefetch_live(uint64_t ctx) {
    for (uint64_t i = 0; i < SW_ASYNC_PREFETCH_LINES && ctx >= i * 64; i++) {
        __builtin_prefetch((const void *)(uintptr_t)(ctx - i * 64), 0, 3);
    }
}
static inline void sw_async_prefetch_guarded(uint64_t ctx) { (void)ctx; }

#endif

// Appends the chain that starts at `ctx` (the context of the function whose frame the runner
// called): each context's resume function, stored as its entry + 1 (sw_stack_t.async_at). Leaves
// one slot of `cap` for the machine frame that follows. Sets res->async_at/count/end, and the end
// says where a chain stopped early. A first link without code where its resume function belongs
// adds nothing: what sat below the record was no context. SW_ASYNC_PAIR reads a context's words.
// async-signal-safe; no system call with sw_async_pair_live.
SW_RAW_STACK_READER static inline void SW_ASYNC_CHAIN_NAME(uint64_t ctx, const sw_walk_mem_t *mem, uint64_t code_lo,
                                                           uint64_t code_hi, uint64_t *out, uint32_t *count,
                                                           uint32_t cap, sw_walk_result_t *res) {
    uint32_t n = *count, at = n;
    // Resume functions are mostly in the object of the async function whose frame led here: its
    // executable range, which the walk has, is code. The contexts' mapping from the thread's hint.
    uint64_t hlo = 1, hhi = 0, olo = 1, ohi = 0;
    sw_async_hint_t *hint = mem->async;
    if (hint != NULL && hint->gen != 0 && hint->gen == mem->root_gen) {
        hlo = hint->lo;
        hhi = hint->hi;
        olo = hint->code_lo;
        ohi = hint->code_hi;
    }
    SW_ASYNC_PREFETCH(ctx);
    // The parents go straight into the hint: gathered apart and copied after the loop, they cost a
    // call to memcpy (clang's idiom) and its cold lines in every sample. A parent is written only
    // after its link was read, when the update below, with the count, is due as well.
    uint64_t *parents = hint != NULL && mem->root_gen != 0 ? hint->parents : NULL;
    uint32_t parent_count = 0;
    uint8_t end = SW_ASYNC_WHOLE;
    for (uint32_t k = 0; ctx != 0; k++) {
        if (k >= SW_ASYNC_MAX_FRAMES || n + 1 >= cap) {
            end = SW_ASYNC_LIMIT;
            break;
        }
        uint64_t w[2];
        if (!SW_ASYNC_PAIR(ctx, &hlo, &hhi, w)) {
            end = SW_ASYNC_UNREADABLE;
            res->async_ctx = ctx;
            break;
        }
        uint64_t resume = sw_arch_code_address(w[1]);
        if (resume == 0 || !sw_async_is_code(resume, code_lo, code_hi, &olo, &ohi)) {
            end = SW_ASYNC_BAD_RESUME;
            break;
        }
        out[n++] = resume + 1;
        ctx = w[0];
        if (ctx != 0 && parents != NULL && parent_count < SW_ASYNC_HINT_CONTEXTS) parents[parent_count++] = ctx;
    }
    if (hint != NULL && mem->root_gen != 0 && hhi > hlo) {
        hint->gen = mem->root_gen;
        hint->lo = hlo;
        hint->hi = hhi;
        hint->code_lo = olo;
        hint->code_hi = ohi;
        hint->parent_count = parent_count;
    }
    if (end == SW_ASYNC_BAD_RESUME && n == at) {
        // Not even the first link held code: whatever sat below the record was no context.
        res->async_end = end;
        return;
    }
    res->async_at = (uint16_t)at;
    res->async_count = (uint8_t)(n - at);
    res->async_end = end;
    *count = n;
}
