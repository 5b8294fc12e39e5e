// Frame-pointer walk: ~1 ns a frame, complete through SwiftPM-built code and the Swift runtime,
// stops at the first function built without frame pointers (glibc, ld.so).
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_internal.h"


// async-signal-safe: every read is checked to lie inside [lo, hi) first; no calls.
SW_RAW_STACK_READER int sw_fp_walk(uint64_t fp, uint64_t lo, uint64_t hi, uint64_t *out, uint32_t *count, uint32_t cap) {
    uint32_t n = *count;
    uint64_t prev = lo;
    while (n < cap) {
        fp &= ~SW_ASYNC_FP_BIT;
        if (fp == 0) {
            *count = n;
            return 0; // the outermost frame record: a clean end
        }
        // A record is two words; it must lie inside the stack, above the previous one, aligned.
        if (hi < 16 || fp < prev || fp < lo || fp > hi - 16 || (fp & 7) != 0) { // hi - 16 must not wrap
            *count = n;
            return 1;
        }
        const uint64_t *rec = (const uint64_t *)(uintptr_t)fp;
        uint64_t ret = sw_arch_code_address(rec[1]);
        uint64_t next = rec[0];
        if (ret == 0) {
            *count = n;
            return 0;
        }
        out[n++] = ret;
        if ((next & ~SW_ASYNC_FP_BIT) != 0 && (next & ~SW_ASYNC_FP_BIT) <= fp) {
            *count = n;
            return 1; // not strictly increasing: a loop or garbage
        }
        prev = fp + 16;
        fp = next;
    }
    *count = n;
    return 1;
}

// async-signal-safe: reads only [sp, hi) of the stack.
SW_RAW_STACK_READER int sw_fp_walk_context(uint64_t pc, uint64_t sp, uint64_t fp, uint64_t hi, uint64_t *out, uint32_t *count,
                       uint32_t cap, uint64_t *leaf_words, uint8_t *leaf_count) {
    out[0] = pc;
    *count = 1;
    *leaf_count = 0;
    if (cap <= 1) return 1;
#if !SW_ARCH_LEAF_CALLER_IN_LR
    // Swift and clang omit the frame of leaf functions: interrupted in one, FP still points at the
    // caller's record and the caller's own return address sits just above SP (at [sp], or a few
    // words up when the leaf pushed registers). The words between SP and that record are copied
    // for sw_recover_leaf_caller, which checks them outside the handler.
    uint64_t f = fp & ~SW_ASYNC_FP_BIT;
    uint64_t limit = sp + 8 * 8;
    if (f >= sp && f < limit) limit = f;
    if (limit > hi) limit = hi;
    for (uint64_t a = sp; (sp & 7) == 0 && a < limit && limit - a >= 8; a += 8) {
        leaf_words[(*leaf_count)++] = *(const uint64_t *)(uintptr_t)a;
    }
#else
    (void)leaf_words; // the caller takes the leaf's caller from LR
#endif
    return sw_fp_walk(fp, sp, hi, out, count, cap);
}

#endif // SW_PLATFORM_SAMPLES
