// The two futex operations Stallwatch's waits use: a word bumped and woken by one side, waited on
// with a bound by the other. Private futexes: every waiter is in this process.
#ifndef SW_FUTEX_H
#define SW_FUTEX_H

#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// async-signal-safe (a system call)
static inline void sw_futex_wake_all(_Atomic uint32_t *word) {
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

// async-signal-safe (a system call); returns at once unless `*word` still holds `expected`, and
// within `ns` nanoseconds in any case (a signal or a spurious wake-up may end it earlier).
static inline void sw_futex_wait_ns(_Atomic uint32_t *word, uint32_t expected, int64_t ns) {
    if (ns <= 0) return;
    struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
}

#endif
