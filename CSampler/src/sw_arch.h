// Everything CSampler assumes about the CPU, in one place: where the interrupted context keeps
// PC, SP and the frame pointer, how libunwind numbers the registers, and what a call instruction
// looks like. Every other file is architecture-neutral.
//
// Static inline on purpose: the handler reads registers on every sample, and an indirect call or
// an out-of-line helper would cost the x86_64 hot path something it did not pay before.
//
// Both architectures keep frame records the same way — two words [saved FP, return address],
// linked from the frame-pointer register (RBP, X29) — so the walkers need nothing from here but
// the registers. What differs is where a frameless leaf leaves its caller: x86_64's `call` pushes
// it onto the stack, arm64's `bl` leaves it in the link register (X30) only.
#ifndef SW_ARCH_H
#define SW_ARCH_H

#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#if defined(__x86_64__)

#define SW_ARCH_NAME "x86_64"
/// libunwind-x86_64's numbering: RAX, RDX, RCX, RBX, RSI, RDI, RBP, RSP, R8-R15 (0-15), RIP (16).
#define SW_ARCH_UNW_REGS 17
#define SW_ARCH_UNW_PC 16
/// Bytes below SP a leaf may use without moving SP (the System V red zone): copied for libunwind.
#define SW_ARCH_RED_ZONE 128
/// 0: the caller of a frameless leaf is found among the words just above SP.
#define SW_ARCH_LEAF_CALLER_IN_LR 0
/// Every x86_64 Linux kernel uses 4 KiB base pages.
#define SW_ARCH_FIXED_PAGE_SIZE 4096u

// async-signal-safe (reads the context only)
static inline uint64_t sw_arch_pc(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.gregs[REG_RIP]; }
static inline uint64_t sw_arch_sp(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.gregs[REG_RSP]; }
static inline uint64_t sw_arch_fp(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.gregs[REG_RBP]; }
static inline uint64_t sw_arch_lr(const ucontext_t *uc) {
    (void)uc; // x86_64 has no link register: return addresses live on the stack
    return 0;
}

/// The calling thread's thread pointer (FS base: glibc's thread descriptor, which sits at the top of
/// the thread's own stack allocation, its stack below it). async-signal-safe: one load.
static inline uint64_t sw_arch_thread_pointer(void) {
    uint64_t tp;
    __asm__("mov %%fs:0, %0" : "=r"(tp));
    return tp;
}

/// A return address as code can be looked up: nothing to strip on x86_64. async-signal-safe.
static inline uint64_t sw_arch_code_address(uint64_t a) { return a; }

/// Registers for libunwind's remote unwind, in its numbering. async-signal-safe.
static inline void sw_arch_unw_regs(const ucontext_t *uc, uint64_t *r) {
    const greg_t *g = uc->uc_mcontext.gregs;
    static const int map[SW_ARCH_UNW_REGS] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                              REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                              REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
    for (int i = 0; i < SW_ARCH_UNW_REGS; i++) r[i] = (uint64_t)g[map[i]];
}

/// 1 when the code ending at `ret` ends with a call instruction, so that `ret` can be a return
/// address. `end` points just past the 8 code bytes read before `ret`. x86 instructions have no
/// alignment, so the encodings are tried from the longest back: direct rel32 and the common
/// indirect forms through a register or a memory operand.
static inline int sw_arch_ends_with_call(uint64_t ret, const uint8_t *end) {
    (void)ret;
    const uint8_t *c = end;
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

/// The target of the direct call that ends at `ret`, or 0 when it is indirect or not a call.
static inline uint64_t sw_arch_direct_call_target(uint64_t ret, const uint8_t *end) {
    if (end[-5] != 0xE8) return 0;
    int32_t rel;
    memcpy(&rel, end - 4, 4);
    return ret + (uint64_t)(int64_t)rel;
}

#elif defined(__aarch64__) && defined(__AARCH64EL__)

#define SW_ARCH_NAME "aarch64"
/// libunwind-aarch64's numbering: X0-X30 (0-30), SP (31), PC (32), PSTATE (33).
#define SW_ARCH_UNW_REGS 34
#define SW_ARCH_UNW_PC 32
/// AAPCS64 on Linux has no red zone: nothing below SP belongs to the interrupted code.
#define SW_ARCH_RED_ZONE 0
/// 1: the caller of a frameless leaf is in LR (X30); the words above SP are the caller's locals.
#define SW_ARCH_LEAF_CALLER_IN_LR 1
/// 0: arm64 kernels are built with 4, 16 or 64 KiB pages; ask at start-up (own_memory.c).
#define SW_ARCH_FIXED_PAGE_SIZE 0u

// async-signal-safe (reads the context only)
static inline uint64_t sw_arch_pc(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.pc; }
static inline uint64_t sw_arch_sp(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.sp; }
static inline uint64_t sw_arch_fp(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.regs[29]; }
static inline uint64_t sw_arch_lr(const ucontext_t *uc) { return (uint64_t)uc->uc_mcontext.regs[30]; }

/// The calling thread's thread pointer (TPIDR_EL0: just above glibc's thread descriptor, which sits
/// under the static TLS at the top of the thread's own stack allocation). async-signal-safe.
static inline uint64_t sw_arch_thread_pointer(void) {
    uint64_t tp;
    __asm__("mrs %0, tpidr_el0" : "=r"(tp));
    return tp;
}

/// Code built with pointer authentication (-mbranch-protection) signs saved return addresses in
/// the bits above the 48-bit user address space; those bits are dropped before anything looks the
/// address up. async-signal-safe.
static inline uint64_t sw_arch_code_address(uint64_t a) { return a & 0x0000FFFFFFFFFFFFULL; }

/// Registers for libunwind's remote unwind, in its numbering. async-signal-safe.
static inline void sw_arch_unw_regs(const ucontext_t *uc, uint64_t *r) {
    for (int i = 0; i < 31; i++) r[i] = (uint64_t)uc->uc_mcontext.regs[i];
    r[31] = (uint64_t)uc->uc_mcontext.sp;
    r[32] = (uint64_t)uc->uc_mcontext.pc;
    r[33] = (uint64_t)uc->uc_mcontext.pstate;
}

/// 1 when the 4-byte instruction before `ret` is a call (`bl imm26` or `blr xN`), so that `ret`
/// can be a return address. `end` points just past the 8 code bytes read before `ret`.
static inline int sw_arch_ends_with_call(uint64_t ret, const uint8_t *end) {
    if ((ret & 3) != 0) return 0; // instructions are 4-byte aligned
    uint32_t insn;
    memcpy(&insn, end - 4, 4);
    return (insn & 0xFC000000u) == 0x94000000u     // bl imm26
           || (insn & 0xFFFFFC1Fu) == 0xD63F0000u; // blr xN
}

/// The target of the `bl` that ends at `ret`, or 0 when the call is indirect or not a call.
static inline uint64_t sw_arch_direct_call_target(uint64_t ret, const uint8_t *end) {
    uint32_t insn;
    memcpy(&insn, end - 4, 4);
    if ((insn & 0xFC000000u) != 0x94000000u) return 0;
    // imm26 counts instructions from the bl itself, signed.
    int64_t words = (int64_t)((int32_t)(insn << 6) >> 6);
    return ret - 4 + (uint64_t)(words * 4);
}

/// 1 when the 8 code bytes at `code` start a linker's PLT stub or a veneer (`adrp x16, ...`,
/// possibly after `bti c`): a `bl` there reaches a function in another module or too far away.
static inline int sw_arch_is_call_stub(const uint8_t *code) {
    uint32_t insn[2];
    memcpy(insn, code, 8);
    const uint32_t adrp_x16_mask = 0x9F00001Fu, adrp_x16 = 0x90000010u, bti_c = 0xD503245Fu;
    return (insn[0] & adrp_x16_mask) == adrp_x16 || (insn[0] == bti_c && (insn[1] & adrp_x16_mask) == adrp_x16);
}

#else
#error "CSampler supports x86_64 and little-endian aarch64 Linux only"
#endif

#endif
