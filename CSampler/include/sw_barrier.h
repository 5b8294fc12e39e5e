// The asymmetric barrier between a hot path that stores a stamp and then loads a flag (a heartbeat
// probe's busy()) and a rare side that stores the flag and then loads the stamp (a watchdog about
// to sleep without a deadline): membarrier(2) makes every running thread of the process pass a full
// memory barrier, so the hot path needs only a compiler fence, and either the watchdog sees the
// stamp or the hot path sees the flag.
#ifndef SW_BARRIER_H
#define SW_BARRIER_H
#ifdef __cplusplus
extern "C" {
#endif
/// Registers the process for the expedited barrier (once; later calls return the first answer):
/// 0, or -errno where the kernel (before 4.14) or a seccomp filter refuses it.
int sw_barrier_register(void);
/// A full memory barrier on every running thread of the process: 0, or -errno (not registered).
int sw_barrier_all_threads(void);
/// The hot path's half: keeps the compiler from moving the load above the store.
static inline void sw_compiler_fence(void) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
#ifdef __cplusplus
}
#endif
#endif
