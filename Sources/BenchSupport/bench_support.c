// See bench_support.h.
#define _GNU_SOURCE
#include "bench_support.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

// ---- malloc counter ----------------------------------------------------------------------------
// The executable defines malloc & co.; the dynamic linker binds every library's calls to them
// (symbol interposition), and they forward to glibc's exported __libc_* entry points.

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static _Atomic uint64_t g_mallocs;
static __thread uint64_t t_mallocs;

static inline void counted(void) {
    atomic_fetch_add_explicit(&g_mallocs, 1, memory_order_relaxed);
    t_mallocs++;
}

void *malloc(size_t n) { counted(); return __libc_malloc(n); }
void *calloc(size_t n, size_t m) { counted(); return __libc_calloc(n, m); }
void *realloc(void *p, size_t n) { counted(); return __libc_realloc(p, n); }
void free(void *p) { __libc_free(p); }
void *memalign(size_t a, size_t n) { counted(); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { counted(); return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    if (a < sizeof(void *) || (a & (a - 1)) != 0) return EINVAL;
    counted();
    void *p = __libc_memalign(a, n);
    if (p == NULL && n != 0) return ENOMEM;
    *out = p;
    return 0;
}

uint64_t bench_malloc_count_process(void) { return atomic_load_explicit(&g_mallocs, memory_order_relaxed); }
uint64_t bench_malloc_count_thread(void) { return t_mallocs; }

int bench_malloc_counter_active(void) {
    uint64_t before = bench_malloc_count_thread();
    void *volatile p = malloc(24);
    free(p);
    // Through a library too: strdup calls malloc inside libc.
    char *q = strdup("x");
    free(q);
    return bench_malloc_count_thread() >= before + 2;
}

// ---- SIGPROF recorder --------------------------------------------------------------------------

static struct sigaction g_prev;
static int g_have_prev;
static pthread_t g_target;
static uint64_t *g_times;
static uint32_t g_capacity;
static _Atomic uint64_t g_recorded, g_other;

// async-signal-safe: clock_gettime, atomics, and the previous handler.
static void recorder(int sig, siginfo_t *si, void *uc) {
    int saved = errno;
    if (pthread_equal(pthread_self(), g_target)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t n = atomic_fetch_add_explicit(&g_recorded, 1, memory_order_relaxed);
        if (n < g_capacity) g_times[n] = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
    } else {
        atomic_fetch_add_explicit(&g_other, 1, memory_order_relaxed);
    }
    errno = saved;
    if (!g_have_prev) return;
    if (g_prev.sa_flags & SA_SIGINFO) {
        g_prev.sa_sigaction(sig, si, uc);
    } else if (g_prev.sa_handler != SIG_DFL && g_prev.sa_handler != SIG_IGN) {
        g_prev.sa_handler(sig);
    }
}

int bench_sigprof_recorder_install(uint64_t target_pthread, uint32_t capacity) {
    void *p = mmap(NULL, (size_t)capacity * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -errno;
    g_times = p;
    g_capacity = capacity;
    g_target = (pthread_t)target_pthread;
    struct sigaction old;
    if (sigaction(SIGPROF, NULL, &old) != 0) return -errno;
    g_prev = old;
    g_have_prev = (old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != NULL
                                              : (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = recorder;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sa.sa_mask = old.sa_mask;
    if (sigaction(SIGPROF, &sa, NULL) != 0) return -errno;
    return 0;
}

uint64_t bench_sigprof_recorded(uint64_t *out, uint64_t max) {
    uint64_t n = atomic_load_explicit(&g_recorded, memory_order_acquire);
    uint64_t k = n < g_capacity ? n : g_capacity;
    if (k > max) k = max;
    if (out != NULL) memcpy(out, g_times, k * sizeof(uint64_t));
    return n;
}

uint64_t bench_sigprof_other_threads(void) { return atomic_load(&g_other); }
int bench_sigprof_chained(void) { return g_have_prev; }

uint64_t bench_rss_bytes(void) {
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *end = NULL;
    strtoull(buf, &end, 10); // size
    unsigned long long resident = strtoull(end, NULL, 10);
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}
