// The memory-map table: where thread stacks and code are, so that walkers in a signal handler
// only ever read memory that is mapped. Built from /proc/self/maps without malloc.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_internal.h"
#include "sw_unwind_table.h"

#include <stdint.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define SW_INITIAL_MAPS 8192
#define SW_MOST_MAPS (1u << 22)

typedef struct sw_map {
    uint64_t lo, hi;
    uint32_t perms;
} sw_map_t;

// Entries with their own capacity, so a reader holding an older, smaller block never reads past
// it. A process with more mappings than a block holds gets a bigger one (mapped outside any
// handler); blocks are never unmapped: a late handler may still be reading an old one.
typedef struct sw_map_block {
    uint32_t capacity;
    sw_map_t entries[];
} sw_map_block_t;

// Two tables: the rebuild writes the inactive one and then flips, so a handler reading the active
// table is never disturbed by one rebuild. Each table also has a sequence number (odd while being
// written) so a reader overtaken by two rebuilds notices and gives up rather than trust torn bounds.
typedef struct sw_map_table {
    _Atomic(sw_map_block_t *) block;
    _Atomic uint32_t count;
    _Atomic uint64_t seq;
} sw_map_table_t;

static sw_map_table_t g_tables[2];
static _Atomic uint64_t g_grown;                 // times a table outgrew its block
static _Atomic uint32_t g_active;
static _Atomic uint64_t g_generation;
// CLOCK_BOOTTIME when the active table's /proc/self/maps read began: every mapping made before
// then is in it (see sw_maps_hold_thread_started).
static _Atomic int64_t g_read_began_boot_ns;
static pthread_mutex_t g_rebuild_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t parse_hex(const char **p) {
    uint64_t v = 0;
    for (;;) {
        char c = **p;
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else break;
        v = (v << 4) | (uint64_t)d;
        (*p)++;
    }
    return v;
}

// Parses one line "lo-hi perms ..." into m. Returns 1 when it is a mapping line.
static int parse_line(const char *line, sw_map_t *m) {
    const char *p = line;
    m->lo = parse_hex(&p);
    if (*p != '-') return 0;
    p++;
    m->hi = parse_hex(&p);
    if (*p != ' ') return 0;
    p++;
    m->perms = 0;
    if (p[0] == 'r') m->perms |= SW_MAP_READ;
    if (p[1] == 'w') m->perms |= SW_MAP_WRITE;
    if (p[2] == 'x') m->perms |= SW_MAP_EXEC;
    return m->hi > m->lo;
}

static int read_maps(sw_map_block_t *block, uint32_t *n_out, uint32_t *wanted_out);

int sw_maps_rebuild(void) {
    return sw_maps_rebuild_until(INT64_MAX);
}

int sw_maps_rebuild_until(int64_t deadline_ns) {
    if (deadline_ns == INT64_MAX) {
        pthread_mutex_lock(&g_rebuild_lock);
    } else {
        // Another thread rebuilding now makes this one wait: never past the caller's deadline.
        struct timespec until = {.tv_sec = deadline_ns / 1000000000LL, .tv_nsec = deadline_ns % 1000000000LL};
        if (pthread_mutex_clocklock(&g_rebuild_lock, CLOCK_MONOTONIC, &until) != 0) return SW_ERR_TIMED_OUT;
    }
    sw_map_table_t *t = &g_tables[1 - atomic_load_explicit(&g_active, memory_order_relaxed)];
    struct timespec began;
    int64_t began_ns = clock_gettime(CLOCK_BOOTTIME, &began) == 0
                           ? (int64_t)began.tv_sec * 1000000000LL + began.tv_nsec : 0;
    atomic_fetch_add_explicit(&t->seq, 1, memory_order_acq_rel); // now odd: readers stay away
    atomic_thread_fence(memory_order_release);
    int rc = 0;
    uint32_t n = 0;
    for (int pass = 0; pass < 3; pass++) {
        sw_map_block_t *block = atomic_load_explicit(&t->block, memory_order_relaxed);
        uint32_t capacity = block != NULL ? block->capacity : 0;
        uint32_t wanted = 0;
        rc = read_maps(block, &n, &wanted);
        if (rc != 0 || wanted <= capacity) break;
        // More mappings than the block holds: a bigger one, then read again. Never silently short.
        uint32_t bigger = capacity ? capacity : SW_INITIAL_MAPS;
        while (bigger < wanted + wanted / 4 && bigger < SW_MOST_MAPS) bigger *= 2;
        void *p = mmap(NULL, sizeof(sw_map_block_t) + sizeof(sw_map_t) * bigger, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            rc = -errno;
            break;
        }
        ((sw_map_block_t *)p)->capacity = bigger;
        atomic_store_explicit(&t->block, (sw_map_block_t *)p, memory_order_release);
        atomic_fetch_add_explicit(&g_grown, 1, memory_order_relaxed);
    }
    atomic_store_explicit(&t->count, n, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_fetch_add_explicit(&t->seq, 1, memory_order_acq_rel); // even again
    if (rc != 0) {
        // The active table stays as it was: an unreadable file must not empty it.
        pthread_mutex_unlock(&g_rebuild_lock);
        return rc;
    }
    atomic_store_explicit(&g_active, (uint32_t)(t - g_tables), memory_order_release);
    atomic_store_explicit(&g_read_began_boot_ns, began_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_generation, 1, memory_order_acq_rel);
    pthread_mutex_unlock(&g_rebuild_lock);
    // A new mapping is often a new library: which objects keep frame pointers is read again
    // (objects seen before keep their classification).
    sw_modules_rebuild();
    return rc;
}

// Reads /proc/self/maps into `block` (may be NULL: count only). *n: entries stored; *wanted:
// entries the process has, which may exceed the block's capacity.
static int read_maps(sw_map_block_t *block, uint32_t *n_out, uint32_t *wanted_out) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    sw_map_t *g_maps = block != NULL ? block->entries : NULL;
    uint32_t capacity = block != NULL ? block->capacity : 0;
    uint32_t n = 0, wanted = 0;
    char buf[8192];
    char line[512];
    size_t line_len = 0;
    int rc = 0;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR) continue;
            rc = -errno;
            break;
        }
        if (r == 0) break;
        for (ssize_t i = 0; i < r; i++) {
            char c = buf[i];
            if (c == '\n') {
                line[line_len] = 0;
                sw_map_t m;
                // Every mapping on its own, never joined with a neighbour: a handler's reads stop
                // at the end of SP's own mapping, not at the end of whatever sits above it.
                if (parse_line(line, &m) && (m.perms & SW_MAP_READ)) {
                    wanted++;
                    if (n < capacity) g_maps[n++] = m;
                }
                line_len = 0;
            } else if (line_len + 1 < sizeof line) {
                line[line_len++] = c;
            }
        }
    }
    close(fd);
    *n_out = n;
    *wanted_out = wanted;
    return rc;
}

// async-signal-safe: plain reads of static memory validated by the sequence number.
int sw_maps_find(uint64_t addr, int need, uint64_t *lo, uint64_t *hi) {
    const sw_map_table_t *t = &g_tables[atomic_load_explicit(&g_active, memory_order_acquire)];
    uint64_t s1 = atomic_load_explicit(&t->seq, memory_order_acquire);
    if (s1 & 1) return 0;
    const sw_map_block_t *block = atomic_load_explicit(&t->block, memory_order_acquire);
    if (block == NULL) return 0;
    const sw_map_t *g_maps = block->entries;
    uint32_t n = atomic_load_explicit(&t->count, memory_order_relaxed);
    if (n > block->capacity) n = block->capacity; // a count torn from a bigger block: stay inside this one
    uint32_t a = 0, b = n;
    uint64_t flo = 0, fhi = 0;
    uint32_t fperms = 0;
    int found = 0;
    while (a < b) {
        uint32_t mid = a + (b - a) / 2;
        uint64_t mlo = g_maps[mid].lo, mhi = g_maps[mid].hi;
        if (addr < mlo) b = mid;
        else if (addr >= mhi) a = mid + 1;
        else {
            flo = mlo;
            fhi = mhi;
            fperms = g_maps[mid].perms;
            found = 1;
            break;
        }
    }
    atomic_thread_fence(memory_order_acquire);
    uint64_t s2 = atomic_load_explicit(&t->seq, memory_order_relaxed);
    if (s1 != s2 || !found || (fperms & (uint32_t)need) != (uint32_t)need) return 0;
    *lo = flo;
    *hi = fhi;
    return 1;
}

// async-signal-safe
int sw_maps_is_exec(uint64_t addr) {
    uint64_t lo, hi;
    return sw_maps_find(addr, SW_MAP_READ | SW_MAP_EXEC, &lo, &hi);
}

uint64_t sw_maps_grown(void) {
    return atomic_load_explicit(&g_grown, memory_order_relaxed);
}

// Not for handlers (sysconf). A thread's stack is mapped before the thread starts (pthread_create
// maps or reuses it, then clones), so a table read after the thread's start holds it. The start is
// in clock ticks (10 ms): a start within a tick of the read is not trusted.
int sw_maps_hold_thread_started(uint64_t start_ticks) {
    long hz = sysconf(_SC_CLK_TCK);
    int64_t read_began = atomic_load_explicit(&g_read_began_boot_ns, memory_order_relaxed);
    if (hz <= 0 || read_began <= 0) return 0;
    int64_t tick_ns = 1000000000LL / hz;
    return (int64_t)start_ticks * tick_ns + tick_ns < read_began;
}

uint64_t sw_maps_generation(void) {
    return atomic_load_explicit(&g_generation, memory_order_acquire);
}

int sw_maps_refresh(void) {
    return sw_maps_rebuild();
}

#endif // SW_PLATFORM_SAMPLES
