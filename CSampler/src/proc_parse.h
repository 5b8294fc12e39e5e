// Parsers of /proc/self/task/<tid>/ files, apart from the reads so they can be fuzzed on any
// input (Fuzz/). No allocation, no locks: async-signal-safe, callable with threads held still.
#ifndef SW_PROC_PARSE_H
#define SW_PROC_PARSE_H

#include <stdbool.h>
#include <stdint.h>
#include "sw_threads.h"

static inline const char *skip_spaces(const char *p) {
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

static inline const char *skip_token(const char *p) {
    while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\n') p++;
    return p;
}

// Decimal, optionally negative. Returns the end or NULL when there is no digit.
static inline const char *parse_int64(const char *p, int64_t *out) {
    bool negative = false;
    if (*p == '-') {
        negative = true;
        p++;
    }
    if (*p < '0' || *p > '9') return NULL;
    uint64_t v = 0;
    while (*p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
    *out = negative ? -(int64_t)v : (int64_t)v;
    return p;
}

static inline const char *parse_uint64(const char *p, uint64_t *out) {
    if (*p < '0' || *p > '9') return NULL;
    uint64_t v = 0;
    while (*p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
    *out = v;
    return p;
}

// Hex with an optional 0x prefix (syscall args have it, SigBlk does not).
static inline const char *parse_hex(const char *p, uint64_t *out) {
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) p += 2;
    uint64_t v = 0;
    const char *start = p;
    for (;; p++) {
        unsigned d;
        if (*p >= '0' && *p <= '9') d = (unsigned)(*p - '0');
        else if (*p >= 'a' && *p <= 'f') d = (unsigned)(*p - 'a' + 10);
        else if (*p >= 'A' && *p <= 'F') d = (unsigned)(*p - 'A' + 10);
        else break;
        v = (v << 4) | d;
    }
    if (p == start) return NULL;
    *out = v;
    return p;
}


// async-signal-safe: open, raw getdents64, close; no locks, no allocation.

/// Parses a NUL-terminated `stat` line. Returns 0 or -EPROTO.
int sw_parse_thread_stat(const char *buf, int32_t tid, sw_thread_stat_t *out);

/// Finds SigBlk in a NUL-terminated `status` file. Returns 0 or -EPROTO.
int sw_parse_sigblk(const char *buf, uint64_t *mask);

/// Finds SigPnd (the signals pending for the thread itself) in a NUL-terminated `status` file.
/// Returns 0 or -EPROTO.
int sw_parse_sigpnd(const char *buf, uint64_t *mask);

/// Parses a NUL-terminated `syscall` line. Returns 0 or -EPROTO.
int sw_parse_thread_syscall(const char *buf, sw_thread_syscall_t *out);

/// Parses a NUL-terminated `schedstat` line. Returns 0 or -EPROTO.
int sw_parse_schedstat(const char *buf, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *timeslices);

#endif
