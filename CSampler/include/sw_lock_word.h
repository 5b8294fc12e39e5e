// A blocked thread's lock, read from outside: the futex word it waits on and the words after it,
// where a glibc pthread mutex keeps its owner's thread id. The reader runs on the watchdog thread,
// never in a signal handler; it reads through the kernel (process_vm_readv), so a lock whose
// memory was freed or unmapped since the waiter's `syscall` file named it costs a short read,
// never a fault.
#ifndef SW_LOCK_WORD_H
#define SW_LOCK_WORD_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
/// How many 32-bit words a read covers: a glibc `struct __pthread_mutex_s` up to `__kind`
/// (`__lock`, `__count`, `__owner`, `__nusers`, `__kind`) and the word after it.
#define SW_LOCK_WORDS 6

/// What one read found.
typedef struct {
    /// The futex word at the address, then the words after it.
    uint32_t words[SW_LOCK_WORDS];
    /// How many bytes were read: 0 (not even the futex word), 4 (the word only: the rest lies
    /// past the end of its mapping) or `4 * SW_LOCK_WORDS`.
    uint32_t bytes;
} sw_lock_words_t;

/// Reads the futex word at `addr` and the words after it, this process's memory only.
/// Returns `out->bytes`; 0 also for a misaligned or null address (a futex word is 4-aligned).
/// Not async-signal-safe by design (not needed: it is never called from a handler).
uint32_t sw_lock_words_read(uint64_t addr, sw_lock_words_t *out);
#ifdef __cplusplus
}
#endif
#endif
