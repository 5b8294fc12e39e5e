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
#if defined(__linux__)
#include <sys/syscall.h>
#include <ucontext.h>
#endif

// What follows measures Linux mechanisms (glibc's malloc entry points, per-thread CPU-clock
// timers that signal one thread, /proc): built on Linux only. Elsewhere the bench answers
// "not measured" (zero counts, -ENOSYS), so that the package builds where it cannot bench.
#if defined(__linux__)

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

// Per-thread counts another thread can read by tid (the watchdog's, read from the bench's main
// thread). A thread claims a slot at its first malloc; slots are never given back, so a bench that
// creates more than BENCH_TID_SLOTS threads stops counting the later ones by tid (-1 = unclaimed,
// -2 = no slot left).
#define BENCH_TID_SLOTS 1024
static _Atomic int32_t g_slot_tid[BENCH_TID_SLOTS];
static _Atomic uint64_t g_slot_mallocs[BENCH_TID_SLOTS];
static _Atomic uint32_t g_slots_used;
static __thread int32_t t_slot = -1;

static void claim_tid_slot(void) {
    uint32_t i = atomic_fetch_add_explicit(&g_slots_used, 1, memory_order_relaxed);
    if (i >= BENCH_TID_SLOTS) {
        t_slot = -2;
        return;
    }
    atomic_store_explicit(&g_slot_tid[i], (int32_t)syscall(SYS_gettid), memory_order_release);
    t_slot = (int32_t)i;
}

static inline void counted(void) {
    atomic_fetch_add_explicit(&g_mallocs, 1, memory_order_relaxed);
    t_mallocs++;
    if (t_slot == -1) claim_tid_slot();
    if (t_slot >= 0) atomic_fetch_add_explicit(&g_slot_mallocs[t_slot], 1, memory_order_relaxed);
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

uint64_t bench_malloc_count_tid(int32_t tid) {
    uint32_t used = atomic_load_explicit(&g_slots_used, memory_order_acquire);
    if (used > BENCH_TID_SLOTS) used = BENCH_TID_SLOTS;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < used; i++) {
        if (atomic_load_explicit(&g_slot_tid[i], memory_order_acquire) == tid) {
            sum += atomic_load_explicit(&g_slot_mallocs[i], memory_order_relaxed);
        }
    }
    return sum;
}

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

// async-signal-safe (clock_gettime is the vDSO's): CLOCK_MONOTONIC in ns.
static inline uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

// async-signal-safe: clock_gettime, atomics, and the previous handler.
static void recorder(int sig, siginfo_t *si, void *uc) {
    int saved = errno;
    if (pthread_equal(pthread_self(), g_target)) {
        uint64_t now = mono_ns();
        uint64_t n = atomic_fetch_add_explicit(&g_recorded, 1, memory_order_relaxed);
        if (n < g_capacity) g_times[n] = now;
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

// ---- timer/empty floor ---------------------------------------------------------------------------
// The timer ring's own mechanism with nothing in the handler: a timer on the thread's CPU clock sends
// the sampling signal to the thread itself; Stallwatch's dispatcher does not recognise the cookie and
// chains to this handler, which records the time and returns. The signal, the timer, the dispatch
// and the chain are the ring's; the frame-pointer walk and the ring entry are not.

#define BENCH_FLOOR_MAGIC 0xB5F1ULL
#define BENCH_FLOOR_TIMERS 64

static struct sigaction g_floor_prev;
static int g_floor_have_prev;
static int g_floor_installed;
static int32_t g_floor_tids[BENCH_FLOOR_TIMERS];
static timer_t g_floor_timers[BENCH_FLOOR_TIMERS];
static _Atomic uint32_t g_floor_gen[BENCH_FLOOR_TIMERS]; // 0 = stopped
static uint32_t g_floor_next_gen;
static uint64_t *g_floor_times;
static int32_t *g_floor_time_tids;
static uint32_t g_floor_capacity;
static _Atomic uint64_t g_floor_recorded;
// The bare walk (bench_timer_floor_set_walk): its time and frame count per tick, beside the tick's
// time; frames go to one scratch array, as a ring writes them to its entry.
static _Atomic uint32_t g_floor_walk_max;
static uint64_t *g_floor_walk_ns;
static uint32_t *g_floor_walk_frames;
static uint64_t g_floor_walk_scratch[256];

// async-signal-safe, no call but clock_gettime (vDSO): the chain of frame records from the
// interrupted FP, each record above the last and below the thread pointer (glibc keeps the
// thread's descriptor at the top of its stack), 8-aligned; the PC first. No unwind table, no module
// check, no bound learnt from a table: what reading the records themselves costs, cold, on the
// bench's own frame-pointer workload.
static uint32_t bare_walk(const ucontext_t *uc, uint32_t max) {
#if defined(__x86_64__)
    uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP], sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP],
             fp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
    uint64_t pc = uc->uc_mcontext.pc, sp = uc->uc_mcontext.sp, fp = uc->uc_mcontext.regs[29];
#else
    return 0;
#endif
    uint64_t top = (uint64_t)(uintptr_t)pthread_self();
    if (max > 256) max = 256;
    uint32_t k = 0;
    g_floor_walk_scratch[k++] = pc;
    while (k < max && fp >= sp && fp + 16 <= top && (fp & 7) == 0) {
        const volatile uint64_t *rec = (const volatile uint64_t *)(uintptr_t)fp;
        uint64_t next = rec[0], ra = rec[1];
        if (ra == 0) break;
        g_floor_walk_scratch[k++] = ra;
        if (next <= fp) break;
        fp = next;
    }
    return k;
}

// async-signal-safe: clock_gettime, atomics, and the handler it replaced.
static void floor_handler(int sig, siginfo_t *si, void *uc) {
    if (si != NULL && si->si_code == SI_TIMER) {
        uint64_t cookie = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
        if ((cookie >> 48) == BENCH_FLOOR_MAGIC) {
            int saved = errno;
            uint64_t now = mono_ns();
            uint32_t walk_max = atomic_load_explicit(&g_floor_walk_max, memory_order_relaxed);
            uint64_t walk_ns = 0;
            uint32_t frames = 0;
            if (walk_max > 0) {
                uint64_t t0 = mono_ns();
                frames = bare_walk(uc, walk_max);
                walk_ns = mono_ns() - t0;
            }
            uint32_t idx = (uint32_t)(cookie & 0xffffu);
            uint32_t gen = (uint32_t)((cookie >> 16) & 0xffffffffu);
            if (idx < BENCH_FLOOR_TIMERS && atomic_load_explicit(&g_floor_gen[idx], memory_order_acquire) == gen) {
                uint64_t n = atomic_fetch_add_explicit(&g_floor_recorded, 1, memory_order_relaxed);
                uint64_t k = n % g_floor_capacity;
                g_floor_times[k] = now;
                g_floor_time_tids[k] = g_floor_tids[idx];
                g_floor_walk_ns[k] = walk_ns;
                g_floor_walk_frames[k] = frames;
            }
            errno = saved;
            return;
        }
    }
    if (!g_floor_have_prev) return;
    if (g_floor_prev.sa_flags & SA_SIGINFO) {
        g_floor_prev.sa_sigaction(sig, si, uc);
    } else if (g_floor_prev.sa_handler != SIG_DFL && g_floor_prev.sa_handler != SIG_IGN) {
        g_floor_prev.sa_handler(sig);
    }
}

int bench_timer_floor_install(int signo, uint32_t capacity) {
    if (g_floor_installed) return 0;
    if (capacity == 0) return -EINVAL;
    size_t bytes = (size_t)capacity * (2 * sizeof(uint64_t) + 2 * sizeof(int32_t));
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -errno;
    memset(p, 0, bytes); // touched now: no page fault may land in a measured handler
    g_floor_times = p;
    g_floor_walk_ns = g_floor_times + capacity;
    g_floor_time_tids = (int32_t *)(g_floor_walk_ns + capacity);
    g_floor_walk_frames = (uint32_t *)(g_floor_time_tids + capacity);
    g_floor_capacity = capacity;
    struct sigaction old;
    if (sigaction(signo, NULL, &old) != 0) return -errno;
    g_floor_prev = old;
    g_floor_have_prev = (old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != NULL
                                                    : (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = floor_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(signo, &sa, NULL) != 0) return -errno;
    g_floor_installed = 1;
    return 0;
}

int bench_timer_floor_start(int signo, int32_t tid, int64_t interval_ns) {
    if (!g_floor_installed || tid <= 0 || interval_ns <= 0) return -EINVAL;
    int idx = -1;
    for (int i = 0; i < BENCH_FLOOR_TIMERS; i++) {
        if (atomic_load(&g_floor_gen[i]) == 0) { idx = i; break; }
    }
    if (idx < 0) return -EBUSY;
    if (++g_floor_next_gen == 0) ++g_floor_next_gen;
    uint32_t gen = g_floor_next_gen;
    g_floor_tids[idx] = tid;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = signo;
    sev._sigev_un._tid = tid;
    sev.sigev_value.sival_ptr = (void *)(uintptr_t)((BENCH_FLOOR_MAGIC << 48) | ((uint64_t)gen << 16) | (uint64_t)idx);
    // The kernel's clock id for a thread's CPU time: ((~tid) << 3) | CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD.
    clockid_t cid = (clockid_t)(((~(uint32_t)tid) << 3) | 6u);
    atomic_store_explicit(&g_floor_gen[idx], gen, memory_order_release);
    if (timer_create(cid, &sev, &g_floor_timers[idx]) != 0) {
        int e = errno;
        atomic_store(&g_floor_gen[idx], 0);
        return -e;
    }
    struct itimerspec its;
    its.it_interval.tv_sec = interval_ns / 1000000000LL;
    its.it_interval.tv_nsec = interval_ns % 1000000000LL;
    its.it_value = its.it_interval;
    if (timer_settime(g_floor_timers[idx], 0, &its, NULL) != 0) {
        int e = errno;
        timer_delete(g_floor_timers[idx]);
        atomic_store(&g_floor_gen[idx], 0);
        return -e;
    }
    return idx;
}

void bench_timer_floor_stop(int timer) {
    if (timer < 0 || timer >= BENCH_FLOOR_TIMERS || atomic_load(&g_floor_gen[timer]) == 0) return;
    timer_delete(g_floor_timers[timer]);
    atomic_store_explicit(&g_floor_gen[timer], 0, memory_order_release);
}

// The ticks to read from `from` on: the oldest still kept, up to the head, at most `max`.
static uint64_t floor_window(uint64_t from, uint64_t max, uint64_t *count) {
    uint64_t head = atomic_load_explicit(&g_floor_recorded, memory_order_acquire);
    uint64_t start = from;
    if (g_floor_capacity > 0 && head > g_floor_capacity && start < head - g_floor_capacity) start = head - g_floor_capacity;
    *count = start < head ? (head - start < max ? head - start : max) : 0;
    return start;
}

uint64_t bench_timer_floor_read(uint64_t from, uint64_t *times, int32_t *tids, uint64_t max, uint64_t *count) {
    uint64_t start = floor_window(from, max, count);
    for (uint64_t k = 0; k < *count; k++) {
        times[k] = g_floor_times[(start + k) % g_floor_capacity];
        tids[k] = g_floor_time_tids[(start + k) % g_floor_capacity];
    }
    return start + *count;
}

uint64_t bench_timer_floor_head(void) { return atomic_load_explicit(&g_floor_recorded, memory_order_acquire); }

void bench_timer_floor_set_walk(uint32_t max_frames) {
    atomic_store_explicit(&g_floor_walk_max, max_frames, memory_order_relaxed);
}

uint64_t bench_timer_floor_read_walks(uint64_t from, int32_t *tids, uint64_t *walk_ns, uint32_t *frames, uint64_t max,
                                      uint64_t *count) {
    uint64_t start = floor_window(from, max, count);
    for (uint64_t k = 0; k < *count; k++) {
        tids[k] = g_floor_time_tids[(start + k) % g_floor_capacity];
        walk_ns[k] = g_floor_walk_ns[(start + k) % g_floor_capacity];
        frames[k] = g_floor_walk_frames[(start + k) % g_floor_capacity];
    }
    return start + *count;
}

#else

uint64_t bench_malloc_count_process(void) { return 0; }
uint64_t bench_malloc_count_thread(void) { return 0; }
uint64_t bench_malloc_count_tid(int32_t tid) {
    (void)tid;
    return 0;
}
int bench_malloc_counter_active(void) { return 0; }
int bench_sigprof_recorder_install(uint64_t target_pthread, uint32_t capacity) {
    (void)target_pthread;
    (void)capacity;
    return -ENOSYS;
}
uint64_t bench_sigprof_recorded(uint64_t *out, uint64_t max) {
    (void)out;
    (void)max;
    return 0;
}
uint64_t bench_sigprof_other_threads(void) { return 0; }
int bench_sigprof_chained(void) { return 0; }
uint64_t bench_rss_bytes(void) { return 0; }
int bench_timer_floor_install(int signo, uint32_t capacity) {
    (void)signo;
    (void)capacity;
    return -ENOSYS;
}
int bench_timer_floor_start(int signo, int32_t tid, int64_t interval_ns) {
    (void)signo;
    (void)tid;
    (void)interval_ns;
    return -ENOSYS;
}
void bench_timer_floor_stop(int timer) { (void)timer; }
uint64_t bench_timer_floor_read(uint64_t from, uint64_t *times, int32_t *tids, uint64_t max, uint64_t *count) {
    (void)times;
    (void)tids;
    (void)max;
    *count = 0;
    return from;
}
uint64_t bench_timer_floor_head(void) { return 0; }
void bench_timer_floor_set_walk(uint32_t max_frames) { (void)max_frames; }
uint64_t bench_timer_floor_read_walks(uint64_t from, int32_t *tids, uint64_t *walk_ns, uint32_t *frames, uint64_t max,
                                      uint64_t *count) {
    (void)tids;
    (void)walk_ns;
    (void)frames;
    (void)max;
    *count = 0;
    return from;
}

#endif

// ---- workloads for the unwind paths ------------------------------------------------------------

static const volatile int *g_spin_stop;
static volatile uint64_t *g_spin_progress;

__attribute__((noinline)) static void spin_until_stopped(void) {
    while (!*g_spin_stop) (*g_spin_progress)++;
}

__attribute__((noinline)) static int spinning_compare(const void *a, const void *b) {
    spin_until_stopped();
    return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) static void descend(int depth, int in_qsort) {
    if (depth > 1) {
        descend(depth - 1, in_qsort);
    } else if (in_qsort) {
        int two[2] = {2, 1}; // two elements: qsort_r -> msort_with_tmp -> the comparator
        qsort(two, 2, sizeof two[0], spinning_compare);
    } else {
        spin_until_stopped();
    }
    __asm__ volatile(""); // not a tail call: every level keeps its frame
}

void bench_spin_fp(int depth, const volatile int *stop, volatile uint64_t *progress) {
    g_spin_stop = stop;
    g_spin_progress = progress;
    descend(depth, 0);
}

void bench_spin_in_qsort(int depth, const volatile int *stop, volatile uint64_t *progress) {
    g_spin_stop = stop;
    g_spin_progress = progress;
    descend(depth, 1);
}
