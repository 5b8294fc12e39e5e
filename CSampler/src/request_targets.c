// Which threads a request can be sent to: not one that blocks the signal (libdispatch threads
// block nearly all), not one whose stack is newer than the memory-map table; and, when a thread
// stays silent, why.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_requests.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#define SW_TID_CACHE 256

static _Atomic int32_t g_ok_tids[SW_TID_CACHE]; // threads seen not to block the signal

// Checked stack bounds by thread, kept between requests so a handler asks the kernel once per
// thread and map table, not once per capture. Requesters only (never a handler): a mutex.
typedef struct bounds_entry {
    int32_t tid;
    sw_stack_bounds_t b;
} bounds_entry_t;
static bounds_entry_t g_bounds[SW_TID_CACHE];
static pthread_mutex_t g_bounds_lock = PTHREAD_MUTEX_INITIALIZER;

// Threads that did not answer a request in time and had not blocked the signal, with when that
// request's signal went (a thread inside one long read of a cached file takes it only when the
// call returns). Requesters only: a mutex.
typedef struct late_entry {
    int32_t tid;
    int64_t sent_ns;
} late_entry_t;
static late_entry_t g_late[SW_TID_CACHE];
static pthread_mutex_t g_late_lock = PTHREAD_MUTEX_INITIALIZER;

void sw_target_bounds_get(int32_t tid, sw_stack_bounds_t *out) {
    bounds_entry_t *e = &g_bounds[(uint32_t)tid % SW_TID_CACHE];
    pthread_mutex_lock(&g_bounds_lock);
    if (e->tid == tid) {
        *out = e->b;
    } else {
        out->lo = out->end = out->gen = out->readable = 0;
        out->leaf = (sw_leaf_hint_t){0};
    }
    pthread_mutex_unlock(&g_bounds_lock);
}

void sw_target_bounds_put(int32_t tid, const sw_stack_bounds_t *b) {
    bounds_entry_t *e = &g_bounds[(uint32_t)tid % SW_TID_CACHE];
    pthread_mutex_lock(&g_bounds_lock);
    e->tid = tid;
    e->b = *b;
    pthread_mutex_unlock(&g_bounds_lock);
}

static void targets_after_fork_in_child(void) {
    for (uint32_t i = 0; i < SW_TID_CACHE; i++) atomic_store(&g_ok_tids[i], 0);
    pthread_mutex_init(&g_bounds_lock, NULL);
    memset(g_bounds, 0, sizeof g_bounds);
    pthread_mutex_init(&g_late_lock, NULL);
    memset(g_late, 0, sizeof g_late);
}

__attribute__((constructor)) static void register_targets_fork_handler(void) {
    pthread_atfork(NULL, NULL, targets_after_fork_in_child);
}

// Whether `tid` blocks `signo`: 1 yes, 0 no, SW_ERR_THREAD_GONE. A thread inside our own handler
// shows the signal blocked for the handler's duration (the kernel masks it while it runs), so
// "blocked" counts only when it stays so over three readings 200 µs apart.
int sw_signal_blocked_by(int32_t tid, int signo) {
    // A thread inside our handler blocks the signal for as long as the handler runs, and on a
    // loaded machine it can be preempted there for milliseconds (seen at load 6 on 2 cores):
    // only a mask that stays set over ~6 ms is the thread's own.
    static const long pauses_ns[] = {200000, 1000000, 5000000};
    for (int attempt = 0; attempt < 4; attempt++) {
        uint64_t mask = 0;
        int rc = sw_thread_sigblk(tid, &mask);
        if (rc == -ESRCH) return SW_ERR_THREAD_GONE;
        if (rc != 0 || (mask & (1ULL << (signo - 1))) == 0) return 0;
        if (attempt < 3) {
            struct timespec pause = {.tv_sec = 0, .tv_nsec = pauses_ns[attempt]};
            nanosleep(&pause, NULL);
        }
    }
    return 1;
}

// Decides why a thread did not answer: gone, blocking the signal, or just late.
// Past the deadline already: one SigBlk reading, no retries with pauses.
int sw_target_silence(int32_t tid, int signo, int64_t sent_ns) {
    uint64_t mask = 0;
    int rc = sw_thread_sigblk(tid, &mask);
    if (rc == -ESRCH) return SW_ERR_THREAD_GONE;
    if (rc == 0 && (mask & (1ULL << (signo - 1)))) return SW_ERR_SIGNAL_BLOCKED;
    late_entry_t *e = &g_late[(uint32_t)tid % SW_TID_CACHE];
    pthread_mutex_lock(&g_late_lock);
    e->tid = tid;
    e->sent_ns = sent_ns;
    pthread_mutex_unlock(&g_late_lock);
    return SW_ERR_TIMED_OUT;
}

int sw_target_still_pending(int32_t tid, int signo, int64_t *sent_ns) {
    late_entry_t *e = &g_late[(uint32_t)tid % SW_TID_CACHE];
    pthread_mutex_lock(&g_late_lock);
    late_entry_t late = *e;
    pthread_mutex_unlock(&g_late_lock);
    if (late.tid != tid) return 0;
    uint64_t pending = 0;
    if (sw_thread_sigpnd(tid, &pending) == 0 && (pending & (1ULL << (signo - 1)))) {
        *sent_ns = late.sent_ns;
        return 1;
    }
    pthread_mutex_lock(&g_late_lock);
    if (e->tid == tid) e->tid = 0;
    pthread_mutex_unlock(&g_late_lock);
    return 0;
}

// Before the first request to a thread: does it block the signal (libdispatch threads block
// nearly all), and is its stack in the map table (a new thread's stack may be newer than it)?
int sw_target_check_new(int32_t tid, int signo, int64_t deadline_ns) {
    uint32_t h = (uint32_t)tid % SW_TID_CACHE;
    if (atomic_load_explicit(&g_ok_tids[h], memory_order_relaxed) == tid) return 0;
    int blocked = sw_signal_blocked_by(tid, signo);
    if (blocked < 0) return blocked;
    if (blocked) return SW_ERR_SIGNAL_BLOCKED;
    if (sw_maps_rebuild_until(deadline_ns) == SW_ERR_TIMED_OUT) return SW_ERR_TIMED_OUT;
    atomic_store_explicit(&g_ok_tids[h], tid, memory_order_relaxed);
    return 0;
}

void sw_target_forget(int32_t tid) {
    uint32_t h = (uint32_t)tid % SW_TID_CACHE;
    int32_t expected = tid;
    atomic_compare_exchange_strong(&g_ok_tids[h], &expected, 0);
    sw_stack_bounds_t none = {0};
    sw_target_bounds_put(tid, &none); // a thread that is gone or silent: its bounds are checked again
}

int sw_request_validate(int32_t tid, sw_unwinder_t unwinder, uint32_t max_frames, int64_t timeout_ns) {
    if (sw_sampler_signal() == 0) return SW_ERR_NOT_INSTALLED;
    if (tid <= 0 || max_frames == 0 || timeout_ns <= 0) return SW_ERR_INVALID;
    if (unwinder != SW_UNWIND_FRAME_POINTER && unwinder != SW_UNWIND_LIBUNWIND && unwinder != SW_UNWIND_NONE) {
        return SW_ERR_INVALID;
    }
    if (tid == sw_gettid()) return SW_ERR_SELF;
    return 0;
}

#endif // SW_PLATFORM_SAMPLES
