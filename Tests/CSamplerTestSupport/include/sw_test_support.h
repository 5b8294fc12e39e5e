// Helpers for tests that need C-level behaviour Swift cannot express (vfork, a dlopen loop).
#ifndef SW_TEST_SUPPORT_H
#define SW_TEST_SUPPORT_H

#include <stdint.h>

/// vforks a child that sleeps `ms` then exits; the calling thread is suspended by the kernel
/// (uninterruptibly, only fatal signals wake it) until then. Returns the child's exit status.
int sw_test_vfork_sleep(unsigned ms);

/// Loops dlopen/dlsym/call/dlclose on `library` (calling `symbol`, a `const char *(void)` function)
/// and malloc/free until *stop becomes nonzero. Returns iterations, or -1 when dlopen fails.
int64_t sw_test_dlopen_malloc_loop(const char *library, const char *symbol, volatile int *stop);

#endif
