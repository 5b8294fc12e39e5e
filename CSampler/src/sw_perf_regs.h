// The user registers a perf_event sample carries (PERF_SAMPLE_REGS_USER), in the order the kernel
// writes them (ascending register number): the frame pointer, the stack pointer, the PC (and LR on
// arm64) — what an off-thread walk of the sample's stack copy starts from. Shared by the one-off
// capture (perf_capture.c) and the sampling ring (perf_ring.c).
#ifndef SW_PERF_REGS_H
#define SW_PERF_REGS_H

#if defined(__x86_64__)
// perf's x86_64 register numbers (asm/perf_regs.h): BP 6, SP 7, IP 8.
#define SW_PERF_REGS ((1ULL << 6) | (1ULL << 7) | (1ULL << 8))
enum { SW_PERF_FP = 0, SW_PERF_SP = 1, SW_PERF_PC = 2, SW_PERF_NREGS = 3 };
#elif defined(__aarch64__)
// perf's arm64 register numbers: X29 29, LR 30, SP 31, PC 32.
#define SW_PERF_REGS ((1ULL << 29) | (1ULL << 30) | (1ULL << 31) | (1ULL << 32))
enum { SW_PERF_FP = 0, SW_PERF_LR = 1, SW_PERF_SP = 2, SW_PERF_PC = 3, SW_PERF_NREGS = 4 };
#endif

#endif
