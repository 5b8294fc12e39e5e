// The watchdog's sleep while its event loops rest (see sw_loop_rest.h). Never on a signal
// handler's path.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_loop_rest.h"

#include <errno.h>
#include <linux/aio_abi.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
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

// Tokens of the set's own events: no loop's (loops' tokens are object addresses, never ~0 or ~1).
#define WAKE_TOKEN UINT64_MAX
#define AIO_TOKEN (UINT64_MAX - 1)
// Completions harvested per io_getevents call; more are taken by the next call.
#define AIO_BATCH 32
// Requests the set's ring holds at once (one per resting loop; io_setup rounds it up).
#define AIO_SLOTS 256

// One watched loop descriptor (fd -1: a free slot). Allocated once and kept until the set closes:
// its request's address is the key io_cancel and the completions name it by.
struct rest_watch {
    struct iocb cb;
    int fd;
    int pending;        // a request is in flight
    int active;         // armed: its completion is a wake to report
    int woke;           // its request completed while armed, not yet reported
    uint64_t token;
    uint64_t gen;       // the request's aio_data: a completion of an older one is stale
};

struct sw_loop_rest {
    int epfd;
    // AIO poll (sw_loop_rest.h): the ring's context and the eventfd its completions count in.
    aio_context_t ctx;
    int efd;
    int aio_error;
    struct rest_watch **watches;
    int count, capacity;
};

static long sys_io_setup(unsigned nr, aio_context_t *ctx) { return syscall(SYS_io_setup, nr, ctx); }
static long sys_io_destroy(aio_context_t ctx) { return syscall(SYS_io_destroy, ctx); }
static long sys_io_submit(aio_context_t ctx, long n, struct iocb **cbs) { return syscall(SYS_io_submit, ctx, n, cbs); }
static long sys_io_getevents(aio_context_t ctx, long min, long max, struct io_event *evs, struct timespec *ts) {
    return syscall(SYS_io_getevents, ctx, min, max, evs, ts);
}

// The AIO half of a new set; on failure the set nests descriptors in epoll and says why.
static void open_aio(sw_loop_rest_t *set) {
    set->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (set->efd < 0) {
        set->aio_error = -errno;
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = AIO_TOKEN};
    if (epoll_ctl(set->epfd, EPOLL_CTL_ADD, set->efd, &ev) != 0 || sys_io_setup(AIO_SLOTS, &set->ctx) != 0) {
        set->aio_error = -errno;
        close(set->efd);
        set->efd = -1;
        set->ctx = 0;
    }
}

sw_loop_rest_t *sw_loop_rest_open(int *error) {
    pthread_once(&g_wake_once, make_wake_fd);
    if (g_wake_fd < 0) {
        if (error) *error = -EMFILE;
        return NULL;
    }
    sw_loop_rest_t *set = calloc(1, sizeof *set);
    if (set == NULL) {
        if (error) *error = -ENOMEM;
        return NULL;
    }
    set->efd = -1;
    set->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (set->epfd < 0) {
        if (error) *error = -errno;
        free(set);
        return NULL;
    }
    // The wake-up event and the pool timer (sw_pool_wake_arm_after): never read, so edge-triggered.
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u64 = WAKE_TOKEN};
    int timer = sw_pool_wake_timer_fd();
    struct epoll_event tev = {.events = EPOLLIN | EPOLLET, .data.u64 = WAKE_TOKEN};
    if (epoll_ctl(set->epfd, EPOLL_CTL_ADD, g_wake_fd, &ev) != 0 ||
        (timer >= 0 && epoll_ctl(set->epfd, EPOLL_CTL_ADD, timer, &tev) != 0)) {
        if (error) *error = -errno;
        close(set->epfd);
        free(set);
        return NULL;
    }
    open_aio(set);
    return set;
}

int sw_loop_rest_add_waker(sw_loop_rest_t *set, int fd) {
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u64 = WAKE_TOKEN};
    return epoll_ctl(set->epfd, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

void sw_loop_rest_close(sw_loop_rest_t *set) {
    if (set == NULL) return;
    // io_destroy cancels the requests in flight and waits for them.
    if (set->ctx != 0) sys_io_destroy(set->ctx);
    if (set->efd >= 0) close(set->efd);
    close(set->epfd);
    for (int i = 0; i < set->count; i++) free(set->watches[i]);
    free(set->watches);
    free(set);
}

int sw_loop_rest_keeps_wakes(const sw_loop_rest_t *set) { return set != NULL && set->ctx != 0; }

int sw_loop_rest_aio_error(const sw_loop_rest_t *set) { return set == NULL ? -EINVAL : set->aio_error; }

static struct rest_watch *find_watch(sw_loop_rest_t *set, int fd) {
    for (int i = 0; i < set->count; i++) {
        if (set->watches[i]->fd == fd) return set->watches[i];
    }
    return NULL;
}

static struct rest_watch *add_watch(sw_loop_rest_t *set, int fd) {
    for (int i = 0; i < set->count; i++) {
        struct rest_watch *w = set->watches[i];
        if (w->fd < 0 && !w->pending) {
            w->fd = fd;
            return w;
        }
    }
    if (set->count == set->capacity) {
        int capacity = set->capacity == 0 ? 8 : set->capacity * 2;
        struct rest_watch **grown = realloc(set->watches, (size_t)capacity * sizeof *grown);
        if (grown == NULL) return NULL;
        set->watches = grown;
        set->capacity = capacity;
    }
    struct rest_watch *w = calloc(1, sizeof *w);
    if (w == NULL) return NULL;
    w->fd = fd;
    set->watches[set->count++] = w;
    return w;
}

static long sys_io_cancel(aio_context_t ctx, struct iocb *cb, struct io_event *ev) {
    return syscall(SYS_io_cancel, ctx, cb, ev);
}

// Cancels a request in flight; its completion (no event) comes later, stale by its gen.
static void cancel_request(sw_loop_rest_t *set, struct rest_watch *w) {
    if (!w->pending) return;
    struct io_event ev;
    (void)sys_io_cancel(set->ctx, &w->cb, &ev);
    w->gen++;
    w->pending = 0;
}

// A request stays in flight when its loop is disarmed, and serves the next arm: cancelling it
// would post a completion that wakes the watchdog (and a late look disarms and re-arms every
// resting loop). A completion while disarmed costs one wake when that loop gets an event.
static int arm_aio(sw_loop_rest_t *set, int loop_epfd, uint64_t token) {
    struct rest_watch *w = find_watch(set, loop_epfd);
    if (w == NULL && (w = add_watch(set, loop_epfd)) == NULL) return -ENOMEM;
    // Another loop's descriptor under a reused number: the request in flight watches the old one.
    if (w->token != token) cancel_request(set, w);
    w->token = token;
    w->woke = 0;
    if (!w->pending) {
        w->gen++;
        memset(&w->cb, 0, sizeof w->cb);
        w->cb.aio_lio_opcode = IOCB_CMD_POLL;
        w->cb.aio_fildes = (uint32_t)loop_epfd;
        w->cb.aio_buf = POLLIN;
        w->cb.aio_data = w->gen;
        w->cb.aio_flags = IOCB_FLAG_RESFD;
        w->cb.aio_resfd = (uint32_t)set->efd;
        struct iocb *cbs[1] = {&w->cb};
        if (sys_io_submit(set->ctx, 1, cbs) != 1) return -errno;
        w->pending = 1;
    }
    w->active = 1;
    return 0;
}

int sw_loop_rest_arm(sw_loop_rest_t *set, int loop_epfd, uint64_t token) {
    // -1 also marks a free watch slot: never looked up.
    if (loop_epfd < 0) return -EBADF;
    if (loop_epfd == set->epfd || loop_epfd == set->efd || loop_epfd == g_wake_fd ||
        loop_epfd == sw_pool_wake_timer_fd()) return -EINVAL;
    if (set->ctx != 0) return arm_aio(set, loop_epfd, token);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.u64 = token};
    if (epoll_ctl(set->epfd, EPOLL_CTL_MOD, loop_epfd, &ev) == 0) return 0;
    if (errno != ENOENT) return -errno;
    return epoll_ctl(set->epfd, EPOLL_CTL_ADD, loop_epfd, &ev) == 0 ? 0 : -errno;
}

int sw_loop_rest_disarm(sw_loop_rest_t *set, int loop_epfd) {
    if (loop_epfd < 0) return -EBADF;
    if (set->ctx != 0) {
        struct rest_watch *w = find_watch(set, loop_epfd);
        if (w == NULL || (!w->active && !w->woke)) return -ENOENT;
        w->active = 0;
        w->woke = 0;
        return 0;
    }
    return epoll_ctl(set->epfd, EPOLL_CTL_DEL, loop_epfd, NULL) == 0 ? 0 : -errno;
}

void sw_loop_rest_release_idle(sw_loop_rest_t *set) {
    if (set == NULL || set->ctx == 0) return;
    for (int i = 0; i < set->count; i++) {
        struct rest_watch *w = set->watches[i];
        if (w->fd < 0 || w->active || w->woke) continue;
        cancel_request(set, w);
        w->fd = -1;
        w->token = 0;
    }
}

// The loops whose requests completed with an event since the last call: their tokens, at most
// `max`; the others stay marked, counted again in the eventfd so that the next wait takes them.
// -errno when the ring cannot be read: its completions, and so the loops' wakes, would be lost.
static int harvest_aio(sw_loop_rest_t *set, uint64_t *fired, int max) {
    uint64_t counted;
    ssize_t got = read(set->efd, &counted, sizeof counted);
    (void)got;  // EAGAIN: nothing counted since the last read
    struct io_event events[AIO_BATCH];
    struct timespec none = {0, 0};
    long n;
    do {
        n = sys_io_getevents(set->ctx, 0, AIO_BATCH, events, &none);
        if (n < 0 && errno != EINTR) return -errno;
        for (long i = 0; i < n; i++) {
            struct rest_watch *w = (struct rest_watch *)(uintptr_t)events[i].obj;
            // A cancelled request completes with no event; a completion of an older one is stale.
            if (!w->pending || events[i].data != w->gen) continue;
            w->pending = 0;
            if (w->active && events[i].res > 0) {
                w->active = 0;
                w->woke = 1;
            }
        }
    } while (n == AIO_BATCH);
    int count = 0, left = 0;
    for (int i = 0; i < set->count; i++) {
        struct rest_watch *w = set->watches[i];
        if (!w->woke) continue;
        if (count < max) {
            fired[count++] = w->token;
            w->woke = 0;
        } else {
            left = 1;
        }
    }
    if (left) {
        uint64_t one = 1;
        ssize_t written = write(set->efd, &one, sizeof one);
        (void)written;
    }
    return count;
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

int sw_loop_rest_wait(sw_loop_rest_t *set, uint32_t seen, int64_t timeout_ns, uint64_t *fired, int max) {
    if (timeout_ns <= 0) return 0;
    int64_t deadline = sw_now_ns() + timeout_ns;
    for (;;) {
        struct epoll_event events[16];
        // Counted before the generation is read: a bump after the read finds a sleeper and writes
        // the event, which this set's epoll then holds (sequentially consistent on both sides).
        atomic_fetch_add(&g_sleepers, 1);
        atomic_thread_fence(memory_order_seq_cst);
        int n = 0;
        if (sw_pool_wake_generation() == seen) n = wait_events(set->epfd, events, 16, timeout_ns);
        atomic_fetch_sub(&g_sleepers, 1);
        if (n == -EINTR) return 0;
        if (n < 0) return n;
        int count = 0, woken = n == 0 || sw_pool_wake_generation() != seen;
        for (int i = 0; i < n; i++) {
            uint64_t token = events[i].data.u64;
            if (token == AIO_TOKEN) {
                int harvested = harvest_aio(set, fired + count, max - count);
                if (harvested < 0) return harvested;
                count += harvested;
            } else if (token == WAKE_TOKEN) {
                woken = 1;
            } else if (count < max) {
                fired[count++] = token;
            }
        }
        if (count > 0 || woken) return count;
        // Only cancelled, stale or disarmed requests completed: no loop woke, so sleep on for
        // what is left, as epoll itself does when a nested descriptor had nothing to deliver.
        timeout_ns = deadline - sw_now_ns();
        if (timeout_ns <= 0) return 0;
    }
}

#endif // SW_PLATFORM_SAMPLES
