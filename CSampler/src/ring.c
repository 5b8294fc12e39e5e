// Timer-driven sampling rings (see sw_ring.h).
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_ring.h"
#include "sw_async.h"
#include "sw_cpuclock.h"
#include "sw_internal.h"
#include "sw_threads.h"
#include "sw_unwind_table.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>



typedef struct sw_ring_entry {
    _Atomic uint64_t seq;     // 2 * sample number + 1 while written; 2 * sample number + 2 when done
    sw_stack_t stack;
} sw_ring_entry_t;

typedef struct sw_ring_state {
    _Atomic uint32_t active_gen;   // generation of the running ring, 0 when retired
    uint32_t gen;
    int32_t tid;
    uint32_t capacity;
    uint32_t max_frames;
    sw_stack_bounds_t bounds;      // the thread's checked stack bounds, learned on the first tick
    timer_t timer;
    _Atomic uint64_t next;         // next sample number
    sw_ring_entry_t *entries;      // SW_RING_MAX_CAPACITY entries, mapped once, never unmapped
} sw_ring_state_t;

static sw_ring_state_t g_rings[SW_MAX_RINGS];
static pthread_mutex_t g_rings_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_ring_gen;

// fork: POSIX timers are not inherited, so every ring the child sees is dead. Its timer id may be
// reused by a timer the child creates: forget the ids rather than ever deleting them. The lock is
// held across fork so the child never inherits it locked by a thread that does not exist there.
static void rings_prepare_fork(void) { pthread_mutex_lock(&g_rings_lock); }
static void rings_parent_after_fork(void) { pthread_mutex_unlock(&g_rings_lock); }
static void rings_child_after_fork(void) {
    for (int i = 0; i < SW_MAX_RINGS; i++) atomic_store(&g_rings[i].active_gen, 0);
    pthread_mutex_init(&g_rings_lock, NULL);
}

__attribute__((constructor)) static void register_ring_fork_handlers(void) {
    pthread_atfork(rings_prepare_fork, rings_parent_after_fork, rings_child_after_fork);
}

// async-signal-safe: called from the sampling handler on the sampled thread itself.
void sw_ring_on_signal(uint64_t cookie, const void *ucv) {
    uint32_t idx = (uint32_t)(cookie & 0xffffu);
    uint32_t gen = (uint32_t)((cookie >> 16) & 0xffffffffu);
    if (idx >= SW_MAX_RINGS) return;
    sw_ring_state_t *r = &g_rings[idx];
    if (atomic_load_explicit(&r->active_gen, memory_order_acquire) != gen || r->entries == NULL) return;
    uint64_t n = atomic_fetch_add_explicit(&r->next, 1, memory_order_relaxed);
    sw_ring_entry_t *e = &r->entries[n % r->capacity];
    // The entry was last written a ring's length ago: its lines are cold. Asked for all at once,
    // their misses overlap the clock read and the prologue's instead of coming one by one.
    for (uint32_t i = 0; i < 8; i++) __builtin_prefetch((const char *)e + 64 * i, 1, 3);
    sw_cfi_row_prefetch(sw_arch_pc(ucv));
    atomic_store_explicit(&e->seq, 2 * n + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    int64_t t0 = sw_now_ns();
    sw_capture_fill_nosys(&e->stack, ucv, r->max_frames, &r->bounds);
    // A ring's first sample names the task its thread runs; the others do not: in every sample
    // the runtime's cold code and the task's lines cost ~1-2 us (bench sampler, 5-deep chain:
    // handler p50 2.2-2.7x the same stack without the chain, against 1.3-1.7x without the read).
    if (n == 0 && e->stack.async_end != SW_ASYNC_NONE) sw_task_identity_read(&e->stack);
    e->stack.tid = r->tid;
    e->stack.taken_at_ns = (uint64_t)t0;
    e->stack.handler_ns = (uint64_t)(sw_now_ns() - t0);
    e->stack.latency_ns = 0;
    atomic_store_explicit(&e->seq, 2 * n + 2, memory_order_release);
}

int sw_ring_start(int32_t tid, int64_t interval_ns, sw_ring_clock_t clock, uint32_t max_frames,
                  uint32_t capacity) {
    int signo = sw_sampler_signal();
    if (signo == 0) return SW_ERR_NOT_INSTALLED;
    if (tid <= 0 || interval_ns <= 0 || max_frames == 0 || capacity == 0 || capacity > SW_RING_MAX_CAPACITY ||
        (clock != SW_RING_CLOCK_THREAD_CPU && clock != SW_RING_CLOCK_MONOTONIC)) {
        return SW_ERR_INVALID;
    }
    if (max_frames > SW_MAX_FRAMES) max_frames = SW_MAX_FRAMES;
    int blocked = sw_signal_blocked_by(tid, signo);
    if (blocked < 0) return blocked;
    if (blocked) return SW_ERR_SIGNAL_BLOCKED;
    // The thread's stack must be in the table before its first tick. One started before the table
    // was read is there already: with 64 loops stalled at once, a /proc/self/maps read per ring was
    // a fifth of the watchdog's CPU in the round that had to report them all.
    sw_thread_stat_t st;
    if (sw_thread_stat(tid, &st) != 0 || !sw_maps_hold_thread_started(st.start_ticks)) sw_maps_rebuild();
    pthread_mutex_lock(&g_rings_lock);
    int idx = -1;
    for (int i = 0; i < SW_MAX_RINGS; i++) {
        if (atomic_load(&g_rings[i].active_gen) == 0) { idx = i; break; }
    }
    if (idx < 0) {
        pthread_mutex_unlock(&g_rings_lock);
        return SW_ERR_BUSY;
    }
    sw_ring_state_t *r = &g_rings[idx];
    if (r->entries == NULL) {
        void *p = mmap(NULL, sizeof(sw_ring_entry_t) * SW_RING_MAX_CAPACITY, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            pthread_mutex_unlock(&g_rings_lock);
            return -errno;
        }
        r->entries = p;
    }
    for (uint32_t i = 0; i < capacity; i++) atomic_store(&r->entries[i].seq, 0);
    if (++g_ring_gen == 0) ++g_ring_gen;
    r->gen = g_ring_gen;
    r->tid = tid;
    r->capacity = capacity;
    r->max_frames = max_frames;
    r->bounds.lo = 0;
    r->bounds.end = 0;
    r->bounds.gen = 0;
    r->bounds.readable = 0;
    r->bounds.leaf = (sw_leaf_hint_t){0};
    r->bounds.root.gen = 0;
    atomic_store(&r->next, 0);
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = signo;
    sev._sigev_un._tid = tid;
    uint64_t cookie = (SW_RING_COOKIE_MAGIC << 48) | ((uint64_t)r->gen << 16) | (uint64_t)idx;
    sev.sigev_value.sival_ptr = (void *)(uintptr_t)cookie;
    clockid_t cid = clock == SW_RING_CLOCK_THREAD_CPU ? sw_thread_cpu_clockid(tid) : CLOCK_MONOTONIC;
    atomic_store_explicit(&r->active_gen, r->gen, memory_order_release);
    if (timer_create(cid, &sev, &r->timer) != 0) {
        int e = errno;
        atomic_store(&r->active_gen, 0);
        pthread_mutex_unlock(&g_rings_lock);
        return e == EINVAL || e == ESRCH ? SW_ERR_THREAD_GONE : -e;
    }
    struct itimerspec its;
    its.it_interval.tv_sec = interval_ns / 1000000000LL;
    its.it_interval.tv_nsec = interval_ns % 1000000000LL;
    its.it_value = its.it_interval;
    if (timer_settime(r->timer, 0, &its, NULL) != 0) {
        int e = errno;
        timer_delete(r->timer);
        atomic_store(&r->active_gen, 0);
        pthread_mutex_unlock(&g_rings_lock);
        return -e;
    }
    pthread_mutex_unlock(&g_rings_lock);
    return idx;
}

int sw_ring_set_interval(int ring, int64_t interval_ns) {
    return sw_ring_fire_after(ring, interval_ns, interval_ns);
}

int sw_ring_fire_after(int ring, int64_t first_ns, int64_t interval_ns) {
    if (ring < 0 || ring >= SW_MAX_RINGS || first_ns <= 0 || interval_ns <= 0) return SW_ERR_INVALID;
    pthread_mutex_lock(&g_rings_lock);
    sw_ring_state_t *r = &g_rings[ring];
    if (atomic_load(&r->active_gen) == 0) {
        pthread_mutex_unlock(&g_rings_lock);
        return SW_ERR_INVALID;
    }
    struct itimerspec its;
    its.it_interval.tv_sec = interval_ns / 1000000000LL;
    its.it_interval.tv_nsec = interval_ns % 1000000000LL;
    its.it_value.tv_sec = first_ns / 1000000000LL;
    its.it_value.tv_nsec = first_ns % 1000000000LL;
    int rc = timer_settime(r->timer, 0, &its, NULL) == 0 ? 0 : -errno;
    pthread_mutex_unlock(&g_rings_lock);
    return rc;
}

int sw_ring_stop(int ring) {
    if (ring < 0 || ring >= SW_MAX_RINGS) return SW_ERR_INVALID;
    pthread_mutex_lock(&g_rings_lock);
    sw_ring_state_t *r = &g_rings[ring];
    if (atomic_load(&r->active_gen) == 0) {
        pthread_mutex_unlock(&g_rings_lock);
        return SW_ERR_INVALID;
    }
    timer_delete(r->timer);
    atomic_store_explicit(&r->active_gen, 0, memory_order_release);
    pthread_mutex_unlock(&g_rings_lock);
    return 0;
}

uint64_t sw_ring_taken(int ring) {
    if (ring < 0 || ring >= SW_MAX_RINGS) return 0;
    return atomic_load(&g_rings[ring].next);
}

int64_t sw_ring_read(int ring, uint64_t *next_seq, sw_stack_t *out, uint32_t max_out, uint32_t *count) {
    if (ring < 0 || ring >= SW_MAX_RINGS || next_seq == NULL || count == NULL) return SW_ERR_INVALID;
    sw_ring_state_t *r = &g_rings[ring];
    *count = 0;
    if (r->entries == NULL || r->capacity == 0) return SW_ERR_INVALID;
    sw_async_refresh_maps_if_stale(); // for the next ticks: these were walked already
    uint64_t head = atomic_load_explicit(&r->next, memory_order_acquire);
    uint64_t from = *next_seq;
    int64_t lost = 0;
    if (head > r->capacity && from < head - r->capacity) {
        lost = (int64_t)(head - r->capacity - from);
        from = head - r->capacity;
    }
    uint64_t n = from;
    for (; n < head && *count < max_out; n++) {
        sw_ring_entry_t *e = &r->entries[n % r->capacity];
        uint64_t s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
        if (s1 != 2 * n + 2) {
            if (s1 > 2 * n + 2) lost++; // overwritten meanwhile
            else break;                  // still being written: read it next time
            continue;
        }
        memcpy(&out[*count], &e->stack, sizeof(sw_stack_t));
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&e->seq, memory_order_relaxed) != s1) {
            lost++;
            continue;
        }
        // A chain the handler could not read in place (its context in memory the map table did
        // not know yet): read on now, through the kernel. A stalled job is where it was sampled.
        sw_async_chain_complete(&out[*count], r->max_frames);
        out[*count].leaf_caller_recovered = 0;
        sw_recover_leaf_caller(&out[*count]);
        (*count)++;
    }
    *next_seq = n;
    return lost;
}

#endif // SW_PLATFORM_SAMPLES
