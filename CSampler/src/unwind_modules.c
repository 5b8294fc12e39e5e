// Which loaded objects keep frame pointers: the walk follows frame records through those (about a
// nanosecond a frame) and the unwind table through the others. Built outside handlers; read by
// them under a sequence number, like the memory-map table.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "sw_internal.h"
#include "sw_unwind_table.h"

#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SW_MAX_MODULES 1024
// FDEs sampled per object to classify it: enough for a stable share, cheap for a 100 MB binary.
#define SW_CLASSIFY_SAMPLE 400
// Per mille of FDEs with a frame-pointer CFA above which an object keeps frame pointers. Measured
// here: Swift-built binaries and the Swift runtime 600-900, Debian's libc/libz/libcrypto/libsqlite3
// under 50; leaves (no frame at all even with frame pointers on) make up the rest.
#define SW_FP_SHARE_MIN 300

typedef struct sw_module {
    uint64_t lo, hi; // an executable segment
    uint64_t hdr;    // its object's .eh_frame_hdr: with lo/hi, tells a reloaded library from another
    uint8_t keeps_fp;
} sw_module_t;

static sw_module_t g_modules[SW_MAX_MODULES];
static _Atomic uint32_t g_module_count;
static _Atomic uint64_t g_module_seq; // odd while being rewritten
static _Atomic uint64_t g_unknown;
static pthread_mutex_t g_modules_lock = PTHREAD_MUTEX_INITIALIZER;

// The previous table, to classify each object once: the share is a property of the file.
static sw_module_t g_known[SW_MAX_MODULES];
static uint32_t g_known_count;

typedef struct build {
    sw_module_t out[SW_MAX_MODULES];
    uint32_t n;
} build_t;

static build_t g_build; // guarded by g_modules_lock

static int known_share(const sw_module_t *m, uint8_t *keeps) {
    for (uint32_t i = 0; i < g_known_count; i++) {
        if (g_known[i].lo == m->lo && g_known[i].hi == m->hi && g_known[i].hdr == m->hdr) {
            *keeps = g_known[i].keeps_fp;
            return 1;
        }
    }
    return 0;
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    build_t *b = arg;
    uint64_t hdr = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) hdr = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
    }
    int share = -2;
    for (int i = 0; i < info->dlpi_phnum && b->n < SW_MAX_MODULES; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        sw_module_t *m = &b->out[b->n];
        m->lo = info->dlpi_addr + ph->p_vaddr;
        m->hi = m->lo + ph->p_memsz;
        m->hdr = hdr;
        if (!known_share(m, &m->keeps_fp)) {
            if (share == -2) share = hdr != 0 ? sw_cfi_fp_share(hdr, SW_CLASSIFY_SAMPLE) : -1;
            m->keeps_fp = share >= SW_FP_SHARE_MIN;
        }
        b->n++;
    }
    return 0;
}

static int by_lo(const void *a, const void *b) {
    const sw_module_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

int sw_modules_rebuild(void) {
    pthread_mutex_lock(&g_modules_lock);
    g_build.n = 0;
    dl_iterate_phdr(add_object, &g_build);
    qsort(g_build.out, g_build.n, sizeof g_build.out[0], by_lo);
    atomic_fetch_add_explicit(&g_module_seq, 1, memory_order_acq_rel);
    atomic_thread_fence(memory_order_release);
    memcpy(g_modules, g_build.out, sizeof g_build.out[0] * g_build.n);
    atomic_store_explicit(&g_module_count, g_build.n, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_module_seq, 1, memory_order_release);
    memcpy(g_known, g_build.out, sizeof g_build.out[0] * g_build.n);
    g_known_count = g_build.n;
    pthread_mutex_unlock(&g_modules_lock);
    sw_cfi_row_cache_touch();
    return (int)g_build.n;
}

// async-signal-safe: reads static memory only; a rewrite in progress reads as "not known".
int sw_module_keeps_fp(uint64_t pc) {
    uint64_t lo, hi;
    return sw_module_lookup(pc, &lo, &hi) == 1;
}

// The two entries found last, tried before the binary search: a walk mostly meets the same two
// or three objects (the program, libc, the Swift runtime) capture after capture, and the search's
// five or six probes are cold cache lines in a handler. Only a hint: an index read under the same
// sequence number as the entry, checked against the PC, and written by any thread that missed.
static _Atomic uint32_t g_module_hint[2];

// async-signal-safe: as above, and the segment's range, so a walk can skip the next lookup.
int sw_module_lookup(uint64_t pc, uint64_t *lo_out, uint64_t *hi_out) {
    uint64_t seq = atomic_load_explicit(&g_module_seq, memory_order_acquire);
    if (seq & 1) return -1;
    uint32_t lo = 0, hi = atomic_load_explicit(&g_module_count, memory_order_relaxed);
    if (hi > SW_MAX_MODULES) return -1;
    int keeps = -1;
    for (int h = 0; h < 2; h++) {
        uint32_t i = atomic_load_explicit(&g_module_hint[h], memory_order_relaxed);
        if (i >= hi) continue;
        const volatile sw_module_t *m = &g_modules[i];
        if (pc >= m->lo && pc < m->hi) {
            keeps = m->keeps_fp;
            *lo_out = m->lo;
            *hi_out = m->hi;
            lo = hi; // found: no search
            break;
        }
    }
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const volatile sw_module_t *m = &g_modules[mid];
        if (pc < m->lo) hi = mid;
        else if (pc >= m->hi) lo = mid + 1;
        else {
            keeps = m->keeps_fp;
            *lo_out = m->lo;
            *hi_out = m->hi;
            atomic_store_explicit(&g_module_hint[1], atomic_load_explicit(&g_module_hint[0], memory_order_relaxed),
                                  memory_order_relaxed);
            atomic_store_explicit(&g_module_hint[0], mid, memory_order_relaxed);
            break;
        }
    }
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&g_module_seq, memory_order_relaxed) != seq) return -1;
    if (keeps < 0) {
        atomic_fetch_add_explicit(&g_unknown, 1, memory_order_relaxed);
        return -1;
    }
    return keeps;
}

uint64_t sw_modules_unknown_count(void) {
    return atomic_load_explicit(&g_unknown, memory_order_relaxed);
}

#endif // SW_PLATFORM_SAMPLES
