// Frame records through an object that keeps them, for as long as nothing needs a decision: the
// run that makes up most stacks. Each step is exactly the walk's general frame-record step
// (sw_walk_body.h); anything else — a return address outside [mod_lo, mod_hi), a zero, low or
// misaligned link, a record outside [mem->lo, mem->hi), a zero return address — stops the run and
// leaves that frame to the general step. Kept apart, on local copies of the bounds, so the
// compiler keeps the bounds in registers: ~30 instructions a frame (clang -O2; callgrind on gcc's
// build ~35), where the general step, with its stores through pointers that might alias the bounds
// and its per-frame decisions, took ~70.
// A record whose return address is the job runner's resume call is an async function's: its
// context chain is followed here, as the general step would (SW_RECORD_RUN_CHAIN, first chain of a
// stack only), instead of stopping the run for one general step (bench sampler, 5-deep chain).
// Included by unwind_walk.c once per version of the walk, with SW_RECORD_RUN_NAME and
// SW_RECORD_RUN_CHAIN defined: the handler's version reaches no system call. No include guard.
// async-signal-safe: reads only inside [mem->lo, mem->hi) (or the copy), and the chain's reads.
// Returns the frame records added (not the chain's frames).
SW_RAW_STACK_READER static inline uint32_t SW_RECORD_RUN_NAME(const sw_walk_mem_t *mem, uint64_t mod_lo,
                                                              uint64_t mod_hi, uint64_t *out, uint32_t *count,
                                                              uint32_t cap, uint64_t *pc_io, uint64_t *sp_io,
                                                              uint64_t *fp_io, int *fp_known_io, uint64_t async_ra,
                                                              sw_walk_result_t *res) {
    if (!*fp_known_io || mod_hi <= mod_lo) return 0;
    const uint64_t base = mem->base, span = mod_hi - mod_lo;
    const uint8_t *copy = mem->copy;
    // A record lies in [floor, top]: above SP and the previous record (the general step's `fp < sp`
    // test, SP being the previous record's end), inside [mem->lo, mem->hi) with both words.
    const uint64_t top = mem->hi >= 16 ? mem->hi - 16 : 0;
    uint64_t pc = *pc_io, sp = *sp_io, fp = *fp_io;
    uint64_t floor = sp > mem->lo ? sp : mem->lo;
    uint32_t n = *count, start = n, chain = 0;
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
        if (next_pc == 0) break;
        if (next_pc == async_ra && res->async_end == SW_ASYNC_NONE) {
            // An async function the runtime resumed: its callers are in its context chain, the
            // context saved just below its frame record (the general step's stack_word test: f is
            // aligned and below mem->hi already).
            uint64_t ctx;
            if (f - 8 >= mem->lo && f >= 8) {
                if (copy != NULL) memcpy(&ctx, copy + (f - 8 - base), 8);
                else ctx = *(const volatile uint64_t *)(uintptr_t)(f - 8);
                uint32_t m = n;
                SW_RECORD_RUN_CHAIN(ctx, mem, mod_lo, mod_hi, out, &m, cap, res);
                chain += m - n;
                n = m;
            } else {
                res->async_end = SW_ASYNC_UNREADABLE;
            }
        }
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
    return n - start - chain;
}
