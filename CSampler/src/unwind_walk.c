// The stack walk: frame records where the code keeps frame pointers (a nanosecond a frame), the
// unwind table (.eh_frame) where it does not — Debian's libc, libcrypto, libz, libsqlite3 — and
// for the interrupted frame itself, whose prologue, epilogue or frameless leaf no frame record
// describes. Shared by the signal handler (live stack) and the blocked-thread path (a copy).
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_internal.h"
#include "sw_unwind_table.h"

#include <string.h>


// SW_RAW_STACK_READER, async-signal-safe: reads only inside [lo, hi), from the copy when there is one.
SW_RAW_STACK_READER static inline int stack_word(const sw_walk_mem_t *m, uint64_t a, uint64_t *v) {
    if (a < m->lo || a >= m->hi || m->hi - a < 8 || (a & 7) != 0) return 0;
    if (m->copy != NULL) {
        memcpy(v, m->copy + (a - m->base), 8);
    } else {
        *v = *(const volatile uint64_t *)(uintptr_t)a;
    }
    return 1;
}

#define SW_ASYNC_CHAIN_NAME sw_async_chain_live
#define SW_ASYNC_PAIR sw_async_pair_live
#define SW_ASYNC_PREFETCH sw_async_prefetch_live
#include "sw_async_chain.h"
#undef SW_ASYNC_CHAIN_NAME
#undef SW_ASYNC_PAIR
#undef SW_ASYNC_PREFETCH
#define SW_ASYNC_CHAIN_NAME sw_async_chain_guarded
#define SW_ASYNC_PAIR sw_async_pair_guarded
#define SW_ASYNC_PREFETCH sw_async_prefetch_guarded
#include "sw_async_chain.h"
#undef SW_ASYNC_CHAIN_NAME
#undef SW_ASYNC_PAIR
#undef SW_ASYNC_PREFETCH

#define SW_RECORD_RUN_NAME record_run_live
#define SW_RECORD_RUN_CHAIN sw_async_chain_live
#include "sw_record_run.h"
#undef SW_RECORD_RUN_NAME
#undef SW_RECORD_RUN_CHAIN
#define SW_RECORD_RUN_NAME record_run_guarded
#define SW_RECORD_RUN_CHAIN sw_async_chain_guarded
#include "sw_record_run.h"
#undef SW_RECORD_RUN_NAME
#undef SW_RECORD_RUN_CHAIN

// async-signal-safe, no system call: loads inside [mem->lo, mem->hi) only. Appends the memo's
// frames when the walk stands where the memo began and every return address is still in its slot.
SW_RAW_STACK_READER static inline int root_memo_replay(const sw_walk_mem_t *mem, uint64_t pc, uint64_t sp, uint64_t fp,
                                                       uint64_t *out, uint32_t *n, uint32_t cap) {
    const sw_root_memo_t *r = mem->root;
    if (r == NULL || r->gen == 0 || r->gen != mem->root_gen || r->pc != pc || r->sp != sp || r->fp != fp ||
        r->count == 0 || r->count > SW_ROOT_MEMO_FRAMES || *n + r->count > cap) {
        return 0;
    }
    for (uint32_t i = 0; i < r->count; i++) {
        uint64_t v;
        if (!stack_word(mem, r->slots[i], &v) || v != r->raw[i]) return 0;
    }
    for (uint32_t i = 0; i < r->count; i++) out[(*n)++] = r->frames[i];
    return 1;
}

// async-signal-safe, no system call: static tables, the object's unwind tables read in place, and
// [mem->lo, mem->hi) only. For handlers on the sampled thread itself.
#define SW_WALK_NAME sw_walk_live
#define SW_WALK_FIND_ROW(pc, row, last) sw_cfi_find_row(pc, row, last)
#define SW_WALK_ASYNC_CHAIN sw_async_chain_live
#define SW_WALK_RECORD_RUN record_run_live
#define SW_WALK_GUARDED 0
#include "sw_walk_body.h"
#undef SW_WALK_NAME
#undef SW_WALK_FIND_ROW
#undef SW_WALK_ASYNC_CHAIN
#undef SW_WALK_RECORD_RUN
#undef SW_WALK_GUARDED

// async-signal-safe (system calls: fault-safe table reads, the clock): off the sampled thread.
#define SW_WALK_NAME sw_walk_guarded
#define SW_WALK_FIND_ROW(pc, row, last) sw_cfi_find_row_guarded(pc, row)
#define SW_WALK_ASYNC_CHAIN sw_async_chain_guarded
#define SW_WALK_RECORD_RUN record_run_guarded
#define SW_WALK_GUARDED 1
#include "sw_walk_body.h"
#undef SW_WALK_NAME
#undef SW_WALK_FIND_ROW
#undef SW_WALK_ASYNC_CHAIN
#undef SW_WALK_RECORD_RUN
#undef SW_WALK_GUARDED

// Not for handlers' use (its call graph holds both versions): picks by mem->guard_tables.
int sw_walk(const sw_walk_regs_t *regs, const sw_walk_mem_t *mem, int outer, uint64_t *out, uint32_t *count,
            uint32_t cap, sw_walk_result_t *res) {
    return mem->guard_tables ? sw_walk_guarded(regs, mem, outer, out, count, cap, res)
                             : sw_walk_live(regs, mem, outer, out, count, cap, res);
}

#endif // SW_PLATFORM_SAMPLES
