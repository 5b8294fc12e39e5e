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

// Frame records through an object that keeps them, for as long as nothing needs a decision: the
// run that makes up most stacks. Each step is exactly the walk's general frame-record step
// (sw_walk_body.h); anything else — a return address outside [mod_lo, mod_hi), a zero, low or
// misaligned link, a record outside [mem->lo, mem->hi), a zero return address — stops the run and
// leaves that frame to the general step. Kept apart, on local copies of the bounds, so the
// compiler keeps the bounds in registers: ~30 instructions a frame (clang -O2; callgrind on gcc's
// build ~35), where the general step, with its stores through pointers that might alias the bounds
// and its per-frame decisions, took ~70.
// async-signal-safe: no calls, reads only inside [mem->lo, mem->hi) (or the copy). Returns the
// frames added.
SW_RAW_STACK_READER static inline uint32_t record_run(const sw_walk_mem_t *mem, uint64_t mod_lo, uint64_t mod_hi,
                                                      uint64_t *out, uint32_t *count, uint32_t cap, uint64_t *pc_io,
                                                      uint64_t *sp_io, uint64_t *fp_io, int *fp_known_io,
                                                      uint64_t async_ra) {
    if (!*fp_known_io || mod_hi <= mod_lo) return 0;
    const uint64_t base = mem->base, span = mod_hi - mod_lo;
    const uint8_t *copy = mem->copy;
    // A record lies in [floor, top]: above SP and the previous record (the general step's `fp < sp`
    // test, SP being the previous record's end), inside [mem->lo, mem->hi) with both words.
    const uint64_t top = mem->hi >= 16 ? mem->hi - 16 : 0;
    uint64_t pc = *pc_io, sp = *sp_io, fp = *fp_io;
    uint64_t floor = sp > mem->lo ? sp : mem->lo;
    uint32_t n = *count, start = n;
    while (n < cap) {
        uint64_t f = fp & ~SW_ASYNC_FP_BIT;
        if (pc - 1 - mod_lo >= span || f == 0 || f < floor || f > top || (f & 7) != 0) break;
        uint64_t saved_fp, ra;
        if (copy != NULL) {
            memcpy(&saved_fp, copy + (f - base), 8);
            memcpy(&ra, copy + (f + 8 - base), 8);
        } else {
            saved_fp = ((const volatile uint64_t *)(uintptr_t)f)[0];
            ra = ((const volatile uint64_t *)(uintptr_t)f)[1];
        }
        uint64_t next_pc = sw_arch_code_address(ra);
        // A record the job runner's resume call left belongs to an async function: the general
        // step follows its context chain.
        if (next_pc == 0 || next_pc == async_ra) break;
        out[n++] = next_pc;
        pc = next_pc;
        sp = f + 16;
        floor = sp;
        fp = saved_fp & ~SW_ASYNC_FP_BIT;
        // A link that does not lead up ends the run at the next test (f < floor); whether the
        // general step may still use it is settled once, below.
    }
    if (n == start) return 0;
    *pc_io = pc;
    *sp_io = sp;
    *fp_io = fp;
    *fp_known_io = fp == 0 || fp > sp - 16; // the general step's next_fp_known, for the last record
    *count = n;
    return n - start;
}

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

// async-signal-safe, no system call: static tables, the object's unwind tables read in place, and
// [mem->lo, mem->hi) only. For handlers on the sampled thread itself.
#define SW_WALK_NAME sw_walk_live
#define SW_WALK_FIND_ROW(pc, row, last) sw_cfi_find_row(pc, row, last)
#define SW_WALK_ASYNC_CHAIN sw_async_chain_live
#define SW_WALK_GUARDED 0
#include "sw_walk_body.h"
#undef SW_WALK_NAME
#undef SW_WALK_FIND_ROW
#undef SW_WALK_ASYNC_CHAIN
#undef SW_WALK_GUARDED

// async-signal-safe (system calls: fault-safe table reads, the clock): off the sampled thread.
#define SW_WALK_NAME sw_walk_guarded
#define SW_WALK_FIND_ROW(pc, row, last) sw_cfi_find_row_guarded(pc, row)
#define SW_WALK_ASYNC_CHAIN sw_async_chain_guarded
#define SW_WALK_GUARDED 1
#include "sw_walk_body.h"
#undef SW_WALK_NAME
#undef SW_WALK_FIND_ROW
#undef SW_WALK_ASYNC_CHAIN
#undef SW_WALK_GUARDED

// Not for handlers' use (its call graph holds both versions): picks by mem->guard_tables.
int sw_walk(const sw_walk_regs_t *regs, const sw_walk_mem_t *mem, int outer, uint64_t *out, uint32_t *count,
            uint32_t cap, sw_walk_result_t *res) {
    return mem->guard_tables ? sw_walk_guarded(regs, mem, outer, out, count, cap, res)
                             : sw_walk_live(regs, mem, outer, out, count, cap, res);
}

#endif // SW_PLATFORM_SAMPLES
