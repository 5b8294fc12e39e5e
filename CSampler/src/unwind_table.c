// The unwind-table row for one PC, read from the object's .eh_frame_hdr search table and its
// .eh_frame CIE/FDE, as the compiler wrote them: enough of DWARF's call-frame instructions to
// recover the CFA, the return address and the frame pointer, which is all a stack walk needs.
//
// Runs in the signal handler: no allocation, no lock, no system call. The object is found with
// _dl_find_object (glibc >= 2.35, documented async-signal-safe, lock-free), never dl_iterate_phdr,
// which takes the loader lock a handler can land inside (a real deadlock, seen with libunwind).
// In a handler its tables are read in place: the object holds the PC being unwound, so it is
// mapped. Off the sampled thread (a perf sample or a blocked thread walked after the fact) the
// thread may have moved on and dlclosed that object: there every table byte is first copied with
// a fault-safe read (`guarded`), and an unmapped table ends the walk instead of the process.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sw_unwind_table.h"
#include "sw_internal.h"
#include "sw_symbols.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

// DWARF pointer encodings.
enum {
    PE_ABSPTR = 0x00, PE_ULEB = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03, PE_UDATA8 = 0x04,
    PE_SLEB = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b, PE_SDATA8 = 0x0c,
    PE_PCREL = 0x10, PE_DATAREL = 0x30, PE_INDIRECT = 0x80, PE_OMIT = 0xff,
};

// A bounded reader over [p, end): every read checks the bound, so a malformed table stops the
// parse instead of running off.
typedef struct cursor {
    const uint8_t *p, *end;
    int bad;
    uint64_t bias; // where p's bytes live in the object, minus p (non-zero when reading a copy)
} cursor_t;

static uint64_t rd_uleb(cursor_t *c) {
    uint64_t v = 0;
    for (unsigned shift = 0; c->p < c->end && shift < 64; shift += 7) {
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    c->bad = 1;
    return 0;
}

static int64_t rd_sleb(cursor_t *c) {
    int64_t v = 0;
    unsigned shift = 0;
    for (; c->p < c->end && shift < 64;) {
        uint8_t b = *c->p++;
        v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40)) v |= -((int64_t)1 << shift);
            return v;
        }
    }
    c->bad = 1;
    return 0;
}

static uint64_t rd_fixed(cursor_t *c, unsigned n) {
    if (c->end - c->p < (ptrdiff_t)n) {
        c->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, n); // little-endian on both supported architectures
    c->p += n;
    return v;
}

// An encoded pointer. `datarel` is the base for DW_EH_PE_datarel (the .eh_frame_hdr address).
static uint64_t rd_encoded(cursor_t *c, uint8_t enc, uint64_t datarel) {
    if (enc == PE_OMIT) return 0;
    uint64_t field = (uint64_t)(uintptr_t)c->p + c->bias, v;
    switch (enc & 0x0f) {
    case PE_ABSPTR: v = rd_fixed(c, 8); break;
    case PE_ULEB: v = rd_uleb(c); break;
    case PE_UDATA2: v = rd_fixed(c, 2); break;
    case PE_UDATA4: v = rd_fixed(c, 4); break;
    case PE_UDATA8: v = rd_fixed(c, 8); break;
    case PE_SLEB: v = (uint64_t)rd_sleb(c); break;
    case PE_SDATA2: v = (uint64_t)(int64_t)(int16_t)rd_fixed(c, 2); break;
    case PE_SDATA4: v = (uint64_t)(int64_t)(int32_t)rd_fixed(c, 4); break;
    case PE_SDATA8: v = rd_fixed(c, 8); break;
    default: c->bad = 1; return 0;
    }
    switch (enc & 0x70) {
    case 0: break;
    case PE_PCREL: v += field; break;
    case PE_DATAREL: v += datarel; break;
    default: c->bad = 1; return 0; // textrel/funcrel/aligned: not emitted for .eh_frame on Linux
    }
    if (enc & PE_INDIRECT) c->bad = 1; // would read a data pointer: not used for code ranges
    return v;
}

// Size of the fixed part of an encoding (for a pc_range, which has the format but no application).
static uint64_t rd_range(cursor_t *c, uint8_t enc) {
    return rd_encoded(c, (uint8_t)(enc & 0x0f), 0);
}

typedef struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    const uint8_t *insns, *insns_end;
} cie_t;

// `at` holds the CIE's bytes; `addr` is where they are in the object (pc-relative encodings).
static int parse_cie(const uint8_t *at, uint64_t addr, cie_t *out) {
    uint32_t len32;
    memcpy(&len32, at, 4);
    if (len32 == 0 || len32 == 0xffffffffu) return 0; // a terminator, or 64-bit DWARF (not in .eh_frame)
    cursor_t c = {at + 4, at + 4 + len32, 0, addr - (uint64_t)(uintptr_t)at};
    if (rd_fixed(&c, 4) != 0) return 0; // not a CIE
    uint8_t version = (uint8_t)rd_fixed(&c, 1);
    if (version != 1 && version != 3) return 0;
    const char *aug = (const char *)c.p;
    while (c.p < c.end && *c.p != 0) c.p++; // no strnlen: sanitizers intercept it
    if (c.p == c.end) return 0;
    c.p++;
    if (aug[0] == 'e' && aug[1] == 'h') rd_fixed(&c, 8);
    out->code_align = rd_uleb(&c);
    out->data_align = rd_sleb(&c);
    out->ra_reg = version == 1 ? rd_fixed(&c, 1) : rd_uleb(&c);
    out->fde_enc = PE_ABSPTR;
    if (aug[0] == 'z') {
        uint64_t n = rd_uleb(&c);
        if (c.bad || n > (uint64_t)(c.end - c.p)) return 0;
        const uint8_t *aug_end = c.p + n;
        for (const char *a = aug + 1; *a != 0 && !c.bad; a++) {
            if (*a == 'R') out->fde_enc = (uint8_t)rd_fixed(&c, 1);
            else if (*a == 'L') rd_fixed(&c, 1);
            else if (*a == 'P') {
                uint8_t enc = (uint8_t)rd_fixed(&c, 1);
                // The personality pointer is skipped, never followed: its size is all we need.
                cursor_t skip = c;
                rd_encoded(&skip, (uint8_t)(enc & 0x7f), 0);
                c.p = skip.p;
                c.bad |= skip.bad;
            } else if (*a == 'S' || *a == 'B' || *a == 'G') {
                // signal frame / aarch64 BTI / memory tagging: no data
            } else {
                break; // unknown: the length lets us skip the rest
            }
        }
        c.p = aug_end;
    } else if (aug[0] != 0) {
        return 0; // an augmentation without 'z' cannot be skipped safely
    }
    if (c.bad || out->code_align == 0) return 0;
    out->insns = c.p;
    out->insns_end = c.end;
    return 1;
}

typedef struct rules {
    uint8_t cfa_reg;
    int64_t cfa_off;
    uint8_t fp_rule, ra_rule;
    int64_t fp_off, ra_off;
    uint8_t cfa_unsupported;
    uint8_t ever_fp; // the CFA was the frame pointer at some point (classification only)
} rules_t;

#define SW_CFI_STATE_DEPTH 4

// Applies the rule of a register operation to the two registers a walk follows.
static void set_rule(rules_t *r, const cie_t *cie, uint64_t reg, uint8_t rule, int64_t off) {
    if (reg == SW_DWARF_FP) {
        r->fp_rule = rule;
        r->fp_off = off;
    }
    if (reg == cie->ra_reg) {
        r->ra_rule = rule;
        r->ra_off = off;
    }
}

// The CFA of an x86-64 lazy-binding PLT entry (16 bytes: `jmp *GOT`, `push $n`, `jmp PLT0`), whose
// FDE gives it as the expression rsp + 8 + (((rip & 15) >= K) << 3): the return address is on top
// of the stack until `push` ran (K is the offset after it, 11 or 10 by linker). A sample that lands
// in a library's call through its PLT (a 1-in-hundreds chance in a call-heavy loop) otherwise ends
// its walk at the stub. Returns the offset from rsp, or 0 for any other expression.
static int64_t plt_cfa_offset(const uint8_t *e, uint64_t n, uint64_t pc) {
#if defined(__x86_64__)
    // breg7 (rsp) 8; breg16 (rip) 0; lit15; and; litK; ge; lit3; shl; plus
    if (n != 11 || e[0] != 0x77 || e[1] != 0x08 || e[2] != 0x80 || e[3] != 0x00 || e[4] != 0x3f ||
        e[5] != 0x1a || e[6] < 0x30 || e[6] > 0x4f || e[7] != 0x2a || e[8] != 0x33 || e[9] != 0x24 || e[10] != 0x22) {
        return 0;
    }
    return (pc & 15) >= (uint64_t)(e[6] - 0x30) ? 16 : 8;
#else
    (void)e;
    (void)n;
    (void)pc;
    return 0;
#endif
}

// Runs call-frame instructions [p, end) while the location stays <= target. Returns 0 when
// malformed. `initial` holds the CIE's rules for DW_CFA_restore.
static int run(const uint8_t *p, const uint8_t *end, const cie_t *cie, uint64_t loc, uint64_t target,
               rules_t *r, const rules_t *initial, int *ops) {
    cursor_t c = {p, end, 0, 0}; // instructions hold no pc-relative pointers
    rules_t saved[SW_CFI_STATE_DEPTH];
    int depth = 0;
    while (c.p < c.end && !c.bad) {
        if (++*ops > SW_CFI_MAX_OPS) return 0;
        uint8_t op = *c.p++;
        uint8_t hi = op & 0xc0, lo = op & 0x3f;
        uint64_t reg, delta = 0;
        int64_t off;
        if (hi == 0x40) { // advance_loc
            delta = lo;
        } else if (hi == 0x80) { // offset
            off = (int64_t)rd_uleb(&c) * cie->data_align;
            set_rule(r, cie, lo, SW_RULE_AT_CFA, off);
            continue;
        } else if (hi == 0xc0) { // restore
            if (lo == SW_DWARF_FP) { r->fp_rule = initial->fp_rule; r->fp_off = initial->fp_off; }
            if (lo == cie->ra_reg) { r->ra_rule = initial->ra_rule; r->ra_off = initial->ra_off; }
            continue;
        } else {
            switch (op) {
            case 0x00: continue; // nop
            case 0x01: return 0; // set_loc: not emitted by GCC/clang for .eh_frame
            case 0x02: delta = rd_fixed(&c, 1); break;
            case 0x03: delta = rd_fixed(&c, 2); break;
            case 0x04: delta = rd_fixed(&c, 4); break;
            case 0x05: // offset_extended
                reg = rd_uleb(&c);
                off = (int64_t)rd_uleb(&c) * cie->data_align;
                set_rule(r, cie, reg, SW_RULE_AT_CFA, off);
                continue;
            case 0x06: // restore_extended
                reg = rd_uleb(&c);
                if (reg == SW_DWARF_FP) { r->fp_rule = initial->fp_rule; r->fp_off = initial->fp_off; }
                if (reg == cie->ra_reg) { r->ra_rule = initial->ra_rule; r->ra_off = initial->ra_off; }
                continue;
            case 0x07: set_rule(r, cie, rd_uleb(&c), SW_RULE_UNDEFINED, 0); continue;
            case 0x08: set_rule(r, cie, rd_uleb(&c), SW_RULE_SAME, 0); continue;
            case 0x09: // register: the value lives in another register, which a walk does not track
                reg = rd_uleb(&c);
                rd_uleb(&c);
                set_rule(r, cie, reg, SW_RULE_UNSUPPORTED, 0);
                continue;
            case 0x0a:
                if (depth == SW_CFI_STATE_DEPTH) return 0;
                saved[depth++] = *r;
                continue;
            case 0x0b:
                if (depth == 0) return 0;
                {
                    // The whole row, the CFA included (GCC's and LLVM's unwinders do the same, and
                    // compilers rely on it around an epilogue in the middle of a function).
                    uint8_t ever_fp = r->ever_fp;
                    *r = saved[--depth];
                    r->ever_fp = ever_fp;
                }
                continue;
            case 0x0c: // def_cfa
                r->cfa_reg = (uint8_t)rd_uleb(&c);
                r->cfa_off = (int64_t)rd_uleb(&c);
                r->cfa_unsupported = 0;
                r->ever_fp |= r->cfa_reg == SW_DWARF_FP;
                continue;
            case 0x0d:
                r->cfa_reg = (uint8_t)rd_uleb(&c);
                r->cfa_unsupported = 0;
                r->ever_fp |= r->cfa_reg == SW_DWARF_FP;
                continue;
            case 0x0e: r->cfa_off = (int64_t)rd_uleb(&c); continue;
            case 0x0f: { // def_cfa_expression: the lazy-binding PLT's, evaluated; any other not
                uint64_t n = rd_uleb(&c);
                if (n > (uint64_t)(c.end - c.p)) return 0;
                int64_t plt_off = plt_cfa_offset(c.p, n, target);
                c.p += n;
                if (plt_off > 0) {
                    r->cfa_reg = SW_DWARF_SP;
                    r->cfa_off = plt_off;
                    r->cfa_unsupported = 0;
                } else {
                    r->cfa_unsupported = 1;
                }
                continue;
            }
            case 0x10: case 0x16: { // expression, val_expression
                reg = rd_uleb(&c);
                uint64_t n = rd_uleb(&c);
                if (c.bad || n > (uint64_t)(c.end - c.p)) return 0;
                c.p += n;
                set_rule(r, cie, reg, SW_RULE_UNSUPPORTED, 0);
                continue;
            }
            case 0x11: // offset_extended_sf
                reg = rd_uleb(&c);
                off = rd_sleb(&c) * cie->data_align;
                set_rule(r, cie, reg, SW_RULE_AT_CFA, off);
                continue;
            case 0x12: // def_cfa_sf
                r->cfa_reg = (uint8_t)rd_uleb(&c);
                r->cfa_off = rd_sleb(&c) * cie->data_align;
                r->cfa_unsupported = 0;
                r->ever_fp |= r->cfa_reg == SW_DWARF_FP;
                continue;
            case 0x13: r->cfa_off = rd_sleb(&c) * cie->data_align; continue;
            case 0x14: // val_offset
                reg = rd_uleb(&c);
                off = (int64_t)rd_uleb(&c) * cie->data_align;
                set_rule(r, cie, reg, SW_RULE_IS_CFA, off);
                continue;
            case 0x15:
                reg = rd_uleb(&c);
                off = rd_sleb(&c) * cie->data_align;
                set_rule(r, cie, reg, SW_RULE_IS_CFA, off);
                continue;
            case 0x2d: continue; // GNU_window_save / AARCH64_negate_ra_state: the walk strips PAC bits
            case 0x2e: rd_uleb(&c); continue; // GNU_args_size
            case 0x2f: // GNU_negative_offset_extended
                reg = rd_uleb(&c);
                off = -(int64_t)rd_uleb(&c) * cie->data_align;
                set_rule(r, cie, reg, SW_RULE_AT_CFA, off);
                continue;
            default: return 0;
            }
        }
        loc += delta * cie->code_align;
        if (loc > target) return 1;
    }
    return !c.bad;
}

// The address of the FDE covering `pc` through the binary-search table of .eh_frame_hdr, or 0.
// Defined twice from one body: in place (handlers: plain loads, no system call) and guarded (off
// the sampled thread: fault-safe copies, a system call each). Two functions rather than a flag, so
// that the call graph of the handler's version — which scripts/check-handler-safety.py reads from
// the objects — holds no system call at all.
#define SW_DEFINE_FIND_FDE(NAME, READ)                                                          \
    static uint64_t NAME(uint64_t hdr, uint64_t pc) {                                           \
        uint8_t h[12];                                                                          \
        if (!READ(h, hdr, sizeof h)) return 0;                                                  \
        /* version 1; eh_frame_ptr; fde_count (udata4); table of datarel sdata4 pairs, sorted. */ \
        if (h[0] != 1 || h[2] != PE_UDATA4 || h[3] != (PE_DATAREL | PE_SDATA4)) return 0;       \
        uint8_t ptr_enc = h[1] & 0x0f;                                                          \
        if (ptr_enc != PE_SDATA4 && ptr_enc != PE_UDATA4) return 0;                             \
        uint32_t n;                                                                             \
        memcpy(&n, h + 8, 4);                                                                   \
        uint64_t table = hdr + 12;                                                              \
        uint32_t lo = 0, hi = n;                                                                \
        while (lo < hi) { /* last entry whose initial location is <= pc */                      \
            uint32_t mid = lo + (hi - lo) / 2;                                                  \
            int32_t start;                                                                      \
            if (!READ(&start, table + 8 * (uint64_t)mid, 4)) return 0;                          \
            if (hdr + (uint64_t)(int64_t)start <= pc) lo = mid + 1;                             \
            else hi = mid;                                                                      \
        }                                                                                       \
        if (lo == 0) return 0;                                                                  \
        int32_t fde;                                                                            \
        if (!READ(&fde, table + 8 * (uint64_t)(lo - 1) + 4, 4)) return 0;                       \
        return hdr + (uint64_t)(int64_t)fde;                                                    \
    }

// async-signal-safe: table bytes read in place (the sampled thread itself, whose objects stay).
static int read_in_place(void *dst, uint64_t src, size_t len) {
    memcpy(dst, (const void *)(uintptr_t)src, len);
    return 1;
}

// async-signal-safe (a system call): a fault-safe copy; 0 when the bytes are gone (dlclosed).
static int read_guarded(void *dst, uint64_t src, size_t len) {
    return sw_read_own(dst, src, len) == len;
}

SW_DEFINE_FIND_FDE(find_fde_in_place, read_in_place)
SW_DEFINE_FIND_FDE(find_fde_guarded, read_guarded)

// Parses the FDE whose bytes are at `fde` (object address `fde_addr`) and its CIE (`cie`, at
// `cie_addr`; NULL: found in place from the FDE); fills the rules at `target` (or, with target
// UINT64_MAX, follows every instruction). Returns SW_CFI_*.
static int rules_at(const uint8_t *fde, uint64_t fde_addr, const uint8_t *cie_bytes, uint64_t cie_addr,
                    uint64_t target, int check_range, rules_t *r) {
    uint32_t len32;
    memcpy(&len32, fde, 4);
    if (len32 == 0 || len32 == 0xffffffffu) return SW_CFI_NO_INFO;
    cursor_t c = {fde + 4, fde + 4 + len32, 0, fde_addr - (uint64_t)(uintptr_t)fde};
    uint32_t cie_ptr = (uint32_t)rd_fixed(&c, 4);
    if (cie_ptr == 0) return SW_CFI_NO_INFO; // a CIE, not an FDE
    if (cie_bytes == NULL) {
        cie_bytes = fde + 4 - cie_ptr;
        cie_addr = fde_addr + 4 - cie_ptr;
    }
    cie_t cie;
    if (!parse_cie(cie_bytes, cie_addr, &cie)) return SW_CFI_UNSUPPORTED;
    uint64_t start = rd_encoded(&c, cie.fde_enc, 0);
    uint64_t range = rd_range(&c, cie.fde_enc);
    if (c.bad) return SW_CFI_UNSUPPORTED;
    if (check_range && (target < start || target - start >= range)) return SW_CFI_NO_INFO;
    // Augmentation data ('z' CIEs; every CIE GCC and clang emit for .eh_frame has one).
    uint64_t aug = rd_uleb(&c);
    if (c.bad || aug > (uint64_t)(c.end - c.p)) return SW_CFI_UNSUPPORTED;
    c.p += aug;
    memset(r, 0, sizeof *r);
    r->ra_rule = SW_RULE_SAME;
    r->fp_rule = SW_RULE_SAME;
    int ops = 0;
    if (!run(cie.insns, cie.insns_end, &cie, start, UINT64_MAX, r, r, &ops)) return SW_CFI_UNSUPPORTED;
    rules_t initial = *r;
    if (!run(c.p, c.end, &cie, start, target, r, &initial, &ops)) return SW_CFI_UNSUPPORTED;
    return SW_CFI_OK;
}

// Off the sampled thread: the FDE and its CIE copied by fault-safe reads, then parsed from the
// copies. Largest FDE/CIE copied (bytes): GCC's and clang's are tens of bytes; longer ones, from
// huge functions, are treated as having no usable row. Not inlined: its buffers stay off the
// handler's stack.
#define SW_CFI_FDE_COPY 1024
#define SW_CFI_CIE_COPY 256
// Copies the FDE at `fde_addr` and its CIE by fault-safe reads; *cie_addr is where the CIE is.
static int copy_fde_guarded(uint64_t fde_addr, uint8_t fde[SW_CFI_FDE_COPY], uint8_t cie[SW_CFI_CIE_COPY],
                            uint64_t *cie_addr) {
    uint32_t len32, cie_ptr, cie_len;
    // Each record's length first, then exactly its bytes: process_vm_readv never splits one
    // buffer, so a read past the end of .eh_frame's mapping would fail whole (seen under ASan:
    // the function's FDE sat within a buffer's length of the segment's end).
    if (!read_guarded(&len32, fde_addr, 4)) return SW_CFI_NO_INFO;
    if (len32 == 0) return SW_CFI_NO_INFO;
    if (len32 < 4 || len32 > SW_CFI_FDE_COPY - 4) return SW_CFI_UNSUPPORTED;
    if (!read_guarded(fde, fde_addr, 4 + (size_t)len32)) return SW_CFI_NO_INFO;
    memcpy(&cie_ptr, fde + 4, 4);
    if (cie_ptr == 0) return SW_CFI_NO_INFO;
    *cie_addr = fde_addr + 4 - cie_ptr;
    if (!read_guarded(&cie_len, *cie_addr, 4)) return SW_CFI_NO_INFO;
    if (cie_len < 4 || cie_len > SW_CFI_CIE_COPY - 4) return SW_CFI_UNSUPPORTED;
    if (!read_guarded(cie, *cie_addr, 4 + (size_t)cie_len)) return SW_CFI_NO_INFO;
    return SW_CFI_OK;
}

__attribute__((noinline)) static int rules_guarded(uint64_t fde_addr, uint64_t pc, rules_t *r) {
    uint8_t fde[SW_CFI_FDE_COPY], cie[SW_CFI_CIE_COPY];
    uint64_t cie_addr = 0;
    int rc = copy_fde_guarded(fde_addr, fde, cie, &cie_addr);
    if (rc != SW_CFI_OK) return rc;
    return rules_at(fde, fde_addr, cie, cie_addr, pc, 1, r);
}

// Outside handlers (the watchdog thread, for addresses of another thread's stack: fault-safe reads).
int sw_function_start(uint64_t pc, uint64_t *start) {
    struct dl_find_object fo;
    if (_dl_find_object((void *)(uintptr_t)pc, &fo) != 0 || fo.dlfo_eh_frame == NULL) return 0;
    uint64_t fde_addr = find_fde_guarded((uint64_t)(uintptr_t)fo.dlfo_eh_frame, pc);
    if (fde_addr == 0 || fde_addr < (uint64_t)(uintptr_t)fo.dlfo_map_start
        || fde_addr >= (uint64_t)(uintptr_t)fo.dlfo_map_end) {
        return 0;
    }
    uint8_t fde[SW_CFI_FDE_COPY], cie_bytes[SW_CFI_CIE_COPY];
    uint64_t cie_addr = 0;
    if (copy_fde_guarded(fde_addr, fde, cie_bytes, &cie_addr) != SW_CFI_OK) return 0;
    cie_t cie;
    if (!parse_cie(cie_bytes, cie_addr, &cie)) return 0;
    uint32_t len32;
    memcpy(&len32, fde, 4);
    cursor_t c = {fde + 8, fde + 4 + len32, 0, fde_addr - (uint64_t)(uintptr_t)fde};
    uint64_t begin = rd_encoded(&c, cie.fde_enc, 0);
    uint64_t range = rd_range(&c, cie.fde_enc);
    // The search table gives the last FDE starting at or below pc; a pc in a gap after it (code
    // with no unwind information) is in no FDE's range.
    if (c.bad || pc < begin || pc - begin >= range) return 0;
    *start = begin;
    return 1;
}

// async-signal-safe: the row from the rules found, or why there is none.
static int row_from_rules(int rc, const rules_t *r, sw_cfi_row_t *row) {
    if (rc != SW_CFI_OK) return rc;
    if (r->cfa_unsupported || (r->cfa_reg != SW_DWARF_SP && r->cfa_reg != SW_DWARF_FP)) return SW_CFI_UNSUPPORTED;
    row->cfa_reg = r->cfa_reg;
    row->cfa_off = r->cfa_off;
    row->fp_rule = r->fp_rule;
    row->fp_off = r->fp_off;
    row->ra_rule = r->ra_rule;
    row->ra_off = r->ra_off;
    return SW_CFI_OK;
}

// Rows already found, by PC, shared by every thread's handler. A row costs ~1 000 instructions to
// find (FDE search, CIE parse, the instructions up to the PC: most of a 38-frame capture when the
// handler looked up three rows), and a stalled thread is sampled at the same few PCs again and
// again: the interrupted loop, the return addresses under it. An entry is keyed by the PC and by
// what _dl_find_object says holds it now (the object's start and its .eh_frame_hdr), so an object
// dlclosed and another loaded at the same address misses instead of reusing the old row.
// Direct-mapped; each slot is a sequence lock written by whichever handler found the row: odd
// while written, a reader that sees it odd or changed treats the slot as empty, and a writer that
// finds it odd leaves it alone (never waits). Lossy by design, never blocking.
#define SW_ROW_CACHE_BITS 10
#define SW_ROW_CACHE_VALID (1ULL << 63)

typedef struct row_slot {
    _Alignas(64) _Atomic uint64_t seq;
    _Atomic uint64_t pc, obj, hdr, meta; // meta: VALID | rc << 24 | cfa_reg << 16 | fp_rule << 8 | ra_rule
    _Atomic int64_t cfa_off, fp_off, ra_off;
} row_slot_t;

static row_slot_t g_row_cache[1u << SW_ROW_CACHE_BITS];

// async-signal-safe: arithmetic only. A multiplicative hash: nearby PCs of one loop spread out.
static inline row_slot_t *row_slot(uint64_t pc) {
    return &g_row_cache[(pc * 0x9e3779b97f4a7c15ULL) >> (64 - SW_ROW_CACHE_BITS)];
}

// async-signal-safe, no system call: loads only. 1 with *rc (and *row when SW_CFI_OK) on a hit.
static int row_cache_get(uint64_t pc, uint64_t obj, uint64_t hdr, sw_cfi_row_t *row, int *rc) {
    row_slot_t *s = row_slot(pc);
    uint64_t q = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (q & 1) return 0;
    uint64_t p = atomic_load_explicit(&s->pc, memory_order_relaxed);
    uint64_t o = atomic_load_explicit(&s->obj, memory_order_relaxed);
    uint64_t h = atomic_load_explicit(&s->hdr, memory_order_relaxed);
    uint64_t m = atomic_load_explicit(&s->meta, memory_order_relaxed);
    int64_t cfa_off = atomic_load_explicit(&s->cfa_off, memory_order_relaxed);
    int64_t fp_off = atomic_load_explicit(&s->fp_off, memory_order_relaxed);
    int64_t ra_off = atomic_load_explicit(&s->ra_off, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&s->seq, memory_order_relaxed) != q) return 0;
    if (!(m & SW_ROW_CACHE_VALID) || p != pc || o != obj || h != hdr) return 0;
    *rc = (int)((m >> 24) & 0xff);
    if (*rc == SW_CFI_OK) {
        row->cfa_reg = (uint8_t)(m >> 16);
        row->fp_rule = (uint8_t)(m >> 8);
        row->ra_rule = (uint8_t)m;
        row->cfa_off = cfa_off;
        row->fp_off = fp_off;
        row->ra_off = ra_off;
    }
    return 1;
}

// async-signal-safe, no system call: one compare-and-swap, then stores; gives up if another
// handler is writing the slot.
static void row_cache_put(uint64_t pc, uint64_t obj, uint64_t hdr, int rc, const sw_cfi_row_t *row) {
    row_slot_t *s = row_slot(pc);
    uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
    if ((q & 1) || !atomic_compare_exchange_strong_explicit(&s->seq, &q, q + 1, memory_order_relaxed,
                                                            memory_order_relaxed)) {
        return;
    }
    atomic_thread_fence(memory_order_release);
    uint64_t m = SW_ROW_CACHE_VALID | ((uint64_t)(uint8_t)rc << 24);
    if (rc == SW_CFI_OK) m |= ((uint64_t)row->cfa_reg << 16) | ((uint64_t)row->fp_rule << 8) | row->ra_rule;
    atomic_store_explicit(&s->pc, pc, memory_order_relaxed);
    atomic_store_explicit(&s->obj, obj, memory_order_relaxed);
    atomic_store_explicit(&s->hdr, hdr, memory_order_relaxed);
    atomic_store_explicit(&s->meta, m, memory_order_relaxed);
    atomic_store_explicit(&s->cfa_off, rc == SW_CFI_OK ? row->cfa_off : 0, memory_order_relaxed);
    atomic_store_explicit(&s->fp_off, rc == SW_CFI_OK ? row->fp_off : 0, memory_order_relaxed);
    atomic_store_explicit(&s->ra_off, rc == SW_CFI_OK ? row->ra_off : 0, memory_order_relaxed);
    atomic_store_explicit(&s->seq, q + 2, memory_order_release);
}

int sw_cfi_cached_row(uint64_t pc, uint64_t obj, uint64_t hdr, sw_cfi_row_t *row, int *rc) {
    return hdr != 0 && row_cache_get(pc, obj, hdr, row, rc);
}

// async-signal-safe: a prefetch hint only (never faults).
void sw_cfi_row_prefetch(uint64_t pc) {
    __builtin_prefetch(row_slot(pc), 0, 3);
}

// Not for handlers: makes the cache's pages resident, so that no handler takes the page fault of
// a first write to them (a kernel entry in the middle of a sample). Adding zero changes no slot
// and is atomic, so handlers using the cache meanwhile are not disturbed.
void sw_cfi_row_cache_touch(void) {
    for (size_t i = 0; i < sizeof g_row_cache / sizeof g_row_cache[0]; i += 4096 / sizeof g_row_cache[0]) {
        atomic_fetch_add_explicit(&g_row_cache[i].seq, 0, memory_order_relaxed);
    }
}

// async-signal-safe, no system call: _dl_find_object, the row cache above, and loads of the
// object's own read-only tables.
int sw_cfi_find_row(uint64_t pc, sw_cfi_row_t *row, sw_cfi_object_t *last) {
    sw_cfi_object_t here;
    if (last == NULL || pc < last->start || pc >= last->end) {
        struct dl_find_object fo;
        if (_dl_find_object((void *)(uintptr_t)pc, &fo) != 0) return SW_CFI_NO_MODULE;
        here.start = (uint64_t)(uintptr_t)fo.dlfo_map_start;
        here.end = (uint64_t)(uintptr_t)fo.dlfo_map_end;
        here.hdr = (uint64_t)(uintptr_t)fo.dlfo_eh_frame;
        if (last != NULL) *last = here;
    } else {
        here = *last;
    }
    if (here.hdr == 0) return SW_CFI_NO_INFO;
    uint64_t obj = here.start, hdr = here.hdr;
    int rc;
    if (row_cache_get(pc, obj, hdr, row, &rc)) return rc;
    uint64_t fde = find_fde_in_place(hdr, pc);
    if (fde == 0 || fde < obj || fde >= here.end) {
        rc = SW_CFI_NO_INFO;
    } else {
        rules_t r;
        rc = row_from_rules(rules_at((const uint8_t *)(uintptr_t)fde, fde, NULL, 0, pc, 1, &r), &r, row);
    }
    row_cache_put(pc, obj, hdr, rc, row);
    return rc;
}

// async-signal-safe (system calls: process_vm_readv, getpid); used off the sampled thread only.
int sw_cfi_find_row_guarded(uint64_t pc, sw_cfi_row_t *row) {
    struct dl_find_object fo;
    if (_dl_find_object((void *)(uintptr_t)pc, &fo) != 0) return SW_CFI_NO_MODULE;
    if (fo.dlfo_eh_frame == NULL) return SW_CFI_NO_INFO;
    uint64_t fde = find_fde_guarded((uint64_t)(uintptr_t)fo.dlfo_eh_frame, pc);
    if (fde == 0 || fde < (uint64_t)(uintptr_t)fo.dlfo_map_start || fde >= (uint64_t)(uintptr_t)fo.dlfo_map_end) {
        return SW_CFI_NO_INFO;
    }
    rules_t r;
    return row_from_rules(rules_guarded(fde, pc, &r), &r, row);
}

// Outside handlers. A function built with frame pointers makes the frame pointer its CFA once
// its prologue has run; code built without them keeps the CFA on SP. The share of FDEs that do
// the former at some point of the function (its epilogue gives SP back) tells the two kinds apart (measured: Swift-built code and the Swift
// runtime well above half, Debian's C libraries a few per cent).
int sw_cfi_fp_share(uint64_t hdr, uint32_t sample) {
    const uint8_t *h = (const uint8_t *)(uintptr_t)hdr;
    if (h[0] != 1 || h[2] != PE_UDATA4 || h[3] != (PE_DATAREL | PE_SDATA4)) return -1;
    uint32_t n;
    memcpy(&n, h + 8, 4);
    if (n == 0) return -1;
    const int32_t *table = (const int32_t *)(uintptr_t)(hdr + 12);
    uint32_t step = n > sample && sample > 0 ? n / sample : 1, seen = 0, fp = 0;
    for (uint32_t i = 0; i < n; i += step) {
        int32_t off;
        memcpy(&off, &table[2 * i + 1], 4);
        rules_t r;
        uint64_t fde = hdr + (uint64_t)(int64_t)off;
        if (rules_at((const uint8_t *)(uintptr_t)fde, fde, NULL, 0, UINT64_MAX, 0, &r) != SW_CFI_OK) {
            continue;
        }
        seen++;
        if (r.ever_fp) fp++;
    }
    return seen == 0 ? -1 : (int)(fp * 1000 / seen);
}

#endif // SW_PLATFORM_SAMPLES
