// The watchdog's sleep while its event loops rest (see sw_loop_rest.h). Never on a signal
// handler's path.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_loop_rest.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "sw_internal.h"
#include "sw_pool_wake.h"

// One event for the whole process, written whenever the generation is bumped while a watchdog
// sleeps in its set (sw_loop_rest_kick). Each set watches it edge-triggered, so every write wakes
// every set and nobody has to drain it (the counter cannot reach its limit of 2^64 - 2 writes).
static int g_wake_fd = -1;
static pthread_once_t g_wake_once = PTHREAD_ONCE_INIT;
// Sets in sw_loop_rest_wait now: a bump writes the event only when one may sleep there.
static _Atomic int g_sleepers;

static void make_wake_fd(void) { g_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

// A forked child shares the event with its parent but has no watchdog thread: its enqueues must not
// wake the parent's watchdogs.
static void loop_rest_after_fork_in_child(void) { atomic_store(&g_sleepers, 0); }

__attribute__((constructor)) static void register_loop_rest_fork_handler(void) {
    pthread_atfork(NULL, NULL, loop_rest_after_fork_in_child);
}

// Called by every generation bump that wakes waiters (pool_wake.c), after the bump.
void sw_loop_rest_kick(void) {
    atomic_thread_fence(memory_order_seq_cst);  // the bump before the count (see sw_loop_rest_wait)
    if (atomic_load(&g_sleepers) > 0 && g_wake_fd >= 0) {
        uint64_t one = 1;
        ssize_t written = write(g_wake_fd, &one, sizeof one);
        (void)written;  // EAGAIN only at the counter's limit, never reached
    }
}

int sw_loop_rest_open(void) {
    pthread_once(&g_wake_once, make_wake_fd);
    if (g_wake_fd < 0) return -EMFILE;
    int set = epoll_create1(EPOLL_CLOEXEC);
    if (set < 0) return -errno;
    // The token of the wake-up event: no loop's (loops' tokens are object addresses, never ~0).
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u64 = UINT64_MAX};
    // The pool timer too (sw_pool_wake_arm_after): never read, so edge-triggered.
    int timer = sw_pool_wake_timer_fd();
    struct epoll_event tev = {.events = EPOLLIN | EPOLLET, .data.u64 = UINT64_MAX};
    if (epoll_ctl(set, EPOLL_CTL_ADD, g_wake_fd, &ev) != 0 ||
        (timer >= 0 && epoll_ctl(set, EPOLL_CTL_ADD, timer, &tev) != 0)) {
        int err = errno;
        close(set);
        return -err;
    }
    return set;
}

void sw_loop_rest_close(int set) {
    if (set >= 0) close(set);
}

int sw_loop_rest_arm(int set, int loop_epfd, uint64_t token) {
    if (loop_epfd == set || loop_epfd == g_wake_fd || loop_epfd == sw_pool_wake_timer_fd()) return -EINVAL;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.u64 = token};
    if (epoll_ctl(set, EPOLL_CTL_MOD, loop_epfd, &ev) == 0) return 0;
    if (errno != ENOENT) return -errno;
    return epoll_ctl(set, EPOLL_CTL_ADD, loop_epfd, &ev) == 0 ? 0 : -errno;
}

int sw_loop_rest_disarm(int set, int loop_epfd) {
    return epoll_ctl(set, EPOLL_CTL_DEL, loop_epfd, NULL) == 0 ? 0 : -errno;
}

// epoll_pwait2 (Linux 5.11) takes the timeout in ns; before it, epoll_wait's whole ms, rounded up
// so that the watchdog never wakes early and spins.
static int wait_events(int set, struct epoll_event *events, int max, int64_t timeout_ns) {
#ifdef SYS_epoll_pwait2
    static _Atomic int no_pwait2;
    if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
        struct timespec ts = {.tv_sec = timeout_ns / 1000000000LL, .tv_nsec = timeout_ns % 1000000000LL};
        long n = syscall(SYS_epoll_pwait2, set, events, max, &ts, NULL, (size_t)0);
        if (n >= 0 || errno != ENOSYS) return n >= 0 ? (int)n : -errno;
        atomic_store_explicit(&no_pwait2, 1, memory_order_relaxed);
    }
#endif
    int64_t ms = (timeout_ns + 999999) / 1000000;
    int n = epoll_wait(set, events, max, ms > INT32_MAX ? INT32_MAX : (int)ms);
    return n >= 0 ? n : -errno;
}

int sw_loop_rest_wait(int set, uint32_t seen, int64_t timeout_ns, uint64_t *fired, int max) {
    if (timeout_ns <= 0) return 0;
    struct epoll_event events[16];
    // Counted before the generation is read: a bump after the read finds a sleeper and writes the
    // event, which this set's epoll then holds (sequentially consistent on both sides).
    atomic_fetch_add(&g_sleepers, 1);
    atomic_thread_fence(memory_order_seq_cst);
    int n = 0;
    if (sw_pool_wake_generation() == seen) n = wait_events(set, events, 16, timeout_ns);
    atomic_fetch_sub(&g_sleepers, 1);
    if (n == -EINTR) return 0;
    if (n < 0) return n;
    int count = 0;
    for (int i = 0; i < n; i++) {
        if (events[i].data.u64 != UINT64_MAX && count < max) fired[count++] = events[i].data.u64;
    }
    return count;
}

#endif // SW_PLATFORM_SAMPLES
