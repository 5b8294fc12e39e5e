// Frame-pointer walk: ~1 ns a frame, complete through SwiftPM-built code and the Swift runtime,
// stops at the first function built without frame pointers (glibc, ld.so).
#include "sw_internal.h"

// Swift async frames may set bit 60 of a saved frame pointer (FACTS.md).
#define SW_ASYNC_FP_BIT (1ULL << 60)

// async-signal-safe: every read is checked to lie inside [lo, hi) first; no calls.
int sw_fp_walk(uint64_t fp, uint64_t lo, uint64_t hi, uint64_t *out, uint32_t *count, uint32_t cap) {
    uint32_t n = *count;
    uint64_t prev = lo;
    while (n < cap) {
        fp &= ~SW_ASYNC_FP_BIT;
        if (fp == 0) {
            *count = n;
            return 0; // the outermost frame record: a clean end
        }
        // A record is two words; it must lie inside the stack, above the previous one, aligned.
        if (fp < prev || fp < lo || fp > hi - 16 || (fp & 7) != 0) {
            *count = n;
            return 1;
        }
        const uint64_t *rec = (const uint64_t *)(uintptr_t)fp;
        uint64_t ret = rec[1];
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

// async-signal-safe: pure byte tests on the 7 bytes before `c`.
int sw_ends_with_call(const uint8_t *c) {
    if (c[-5] == 0xE8) return 1;                                   // call rel32
    if (c[-2] == 0xFF && (c[-1] & 0xF8) == 0xD0) return 1;         // call *%reg
    if (c[-6] == 0xFF && c[-5] == 0x15) return 1;                  // call *disp32(%rip)
    if (c[-3] == 0xFF && (c[-2] & 0xF8) == 0x50) return 1;         // call *disp8(%reg)
    if (c[-6] == 0xFF && (c[-5] & 0xF8) == 0x90) return 1;         // call *disp32(%reg)
    if (c[-3] == 0xFF && c[-2] == 0x14) return 1;                  // call *(%reg,%reg,s)
    if (c[-4] == 0xFF && c[-3] == 0x54) return 1;                  // call *disp8(%reg,%reg,s)
    if (c[-7] == 0xFF && c[-6] == 0x94) return 1;                  // call *disp32(%reg,%reg,s)
    if (c[-2] == 0xFF && (c[-1] & 0xF8) == 0x10) return 1;         // call *(%reg)
    return 0;
}

// 1 when `ret` follows a call instruction. Reads at most 7 bytes of code, only inside an executable
// mapping that also holds `ret`. async-signal-safe.
static int preceded_by_call(uint64_t ret) {
    uint64_t lo, hi;
    if (ret < 8 || !sw_maps_find(ret - 7, SW_MAP_READ | SW_MAP_EXEC, &lo, &hi) || ret > hi) return 0;
    return sw_ends_with_call((const uint8_t *)(uintptr_t)ret);
}

// async-signal-safe: reads only [sp, hi) of the stack and, through preceded_by_call, code bytes.
int sw_fp_walk_context(uint64_t pc, uint64_t sp, uint64_t fp, uint64_t hi, uint64_t *out, uint32_t *count,
                       uint32_t cap) {
    out[0] = pc;
    *count = 1;
    if (cap <= 1) return 1;
    // Swift and clang omit the frame of leaf functions: interrupted in one, FP still points at the
    // caller's record and the caller's own return address sits just above SP — at [sp], or a few
    // words up when the leaf pushed callee-saved registers. Without this, every sample taken in a
    // leaf would lose the leaf's caller. Only words below the caller's record are considered, and
    // only one that points just past a call instruction is taken.
    uint64_t f = fp & ~SW_ASYNC_FP_BIT;
    uint64_t first_ret = 0;
    uint64_t limit = sp + 8 * 8;
    if (f >= sp && f <= hi - 16 && (f & 7) == 0) {
        first_ret = ((const uint64_t *)(uintptr_t)f)[1];
        if (f < limit) limit = f;
    }
    if (limit > hi) limit = hi;
    for (uint64_t a = sp; sp >= 16 && (sp & 7) == 0 && a + 8 <= limit; a += 8) {
        uint64_t word = *(const uint64_t *)(uintptr_t)a;
        if (word == first_ret || word == pc) break; // the caller's record is next: not a leaf
        if (sw_maps_is_exec(word) && preceded_by_call(word)) {
            out[(*count)++] = word;
            break;
        }
    }
    return sw_fp_walk(fp, sp, hi, out, count, cap);
}
