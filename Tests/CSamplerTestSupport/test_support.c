#define _GNU_SOURCE
#include "sw_test_support.h"
#include "sw_capture.h"
#include "sw_ring.h"
#include "sw_threads.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <signal.h>
#include <string.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

int sw_test_vfork_sleep(unsigned ms) {
    pid_t pid = vfork();
    if (pid == 0) {
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
        syscall(SYS_nanosleep, &ts, NULL);
        _exit(7);
    }
    if (pid < 0) return -1;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int64_t sw_test_dlopen_malloc_loop(const char *library, const char *symbol, volatile int *stop) {
    int64_t n = 0;
    while (!*stop) {
        void *h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) return -1;
        const char *(*fn)(void) = (const char *(*)(void))dlsym(h, symbol);
        if (fn != NULL) (void)fn();
        dlclose(h);
        for (int i = 0; i < 16; i++) {
            void *p = malloc((size_t)(16 << (i % 10)));
            free(p);
        }
        n++;
    }
    return n;
}

int sw_test_fork_child(int parent_ring, unsigned work_ms) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (sw_current_tid() != (int32_t)syscall(SYS_gettid)) _exit(10);
        timer_t mine;
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_NONE;
        if (timer_create(CLOCK_MONOTONIC, &sev, &mine) != 0) _exit(14);
        (void)sw_ring_stop(parent_ring);
        struct itimerspec its;
        if (timer_gettime(mine, &its) != 0) _exit(11);
        int ring = sw_ring_start(sw_current_tid(), 1000000, SW_RING_CLOCK_THREAD_CPU, 64, 64);
        if (ring < 0) _exit(13);
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        volatile uint64_t x = 1;
        do {
            for (int i = 0; i < 100000; i++) x = x * 6364136223846793005ULL + 1;
            clock_gettime(CLOCK_MONOTONIC, &t);
        } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < (long)work_ms);
        uint64_t taken = sw_ring_taken(ring);
        sw_ring_stop(ring);
        _exit(taken > 0 ? 0 : 12);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int sw_test_fork_exec_many(int n) {
    int failures = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) { failures++; continue; }
        if (pid == 0) {
            char *argv[] = {"/bin/true", NULL};
            execv("/bin/true", argv);
            _exit(127);
        }
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failures++;
    }
    return failures;
}

typedef struct {
    int fd;
    _Atomic int stop;
} sw_test_pipe_writer_t;

static void *pipe_writer(void *arg) {
    sw_test_pipe_writer_t *w = arg;
    struct timespec ms = {.tv_sec = 0, .tv_nsec = 1000000};
    while (!atomic_load(&w->stop)) {
        (void)!write(w->fd, "x", 1);
        nanosleep(&ms, NULL);
    }
    return NULL;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void burn_us(unsigned us) {
    double end = now_s() + us / 1e6;
    volatile uint64_t x = 1;
    while (now_s() < end) {
        for (int i = 0; i < 1000; i++) x = x * 6364136223846793005ULL + 1;
    }
}

int sw_test_burst_and_block(double seconds, unsigned burst_us, uint64_t *eintr, uint64_t *calls) {
    *eintr = 0;
    *calls = 0;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) return -errno;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        int e = errno;
        close(ep);
        return -e;
    }
    sw_test_pipe_writer_t w = {.fd = p[1], .stop = 0};
    pthread_t writer;
    if (pthread_create(&writer, NULL, pipe_writer, &w) != 0) {
        close(ep);
        close(p[0]);
        close(p[1]);
        return -EAGAIN;
    }
    double end = now_s() + seconds;
    struct epoll_event ev;
    char buf[64];
    while (now_s() < end) {
        burn_us(burst_us);
        struct timespec ms = {.tv_sec = 0, .tv_nsec = 1000000};
        if (nanosleep(&ms, NULL) != 0 && errno == EINTR) (*eintr)++;
        burn_us(burst_us);
        if (epoll_wait(ep, &ev, 1, 1) < 0 && errno == EINTR) (*eintr)++;
        burn_us(burst_us);
        if (read(p[0], buf, sizeof buf) < 0 && errno == EINTR) (*eintr)++;
        *calls += 3;
    }
    atomic_store(&w.stop, 1);
    pthread_join(writer, NULL);
    close(ep);
    close(p[0]);
    close(p[1]);
    return 0;
}

// Internal to CSampler (sw_internal.h), declared here for this one test.
int sw_maps_rebuild(void);
int sw_maps_find(uint64_t addr, int need, uint64_t *lo, uint64_t *hi);
uint64_t sw_maps_grown(void);

int sw_test_many_mappings(unsigned count, uint64_t *grown) {
    long page = sysconf(_SC_PAGESIZE);
    size_t len = (size_t)page * count;
    // One reservation, then alternating protections: one region per page, never merged.
    uint8_t *base = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return -errno;
    for (unsigned i = 1; i < count; i += 2) {
        if (mprotect(base + (size_t)i * (size_t)page, (size_t)page, PROT_READ | PROT_WRITE) != 0) {
            int e = errno;
            munmap(base, len);
            return -e;
        }
    }
    uint64_t before = sw_maps_grown();
    sw_maps_rebuild();
    uint64_t lo = 0, hi = 0;
    uint64_t last = (uint64_t)(uintptr_t)(base + (size_t)(count - 1) * (size_t)page);
    // The region may merge with a neighbour of the same protection after it, never before it.
    int found = sw_maps_find(last, 1, &lo, &hi) && lo == last && hi >= last + (uint64_t)page;
    *grown = sw_maps_grown() - before;
    munmap(base, len);
    sw_maps_rebuild();
    return found;
}

// ---- a stack whose mapping shrank after the table was read -----------------------------------

typedef struct stale_stack_target {
    uint64_t fake_fp;
    _Atomic int32_t tid;
    _Atomic int stop;
} stale_stack_target_t;

// Spins with the frame pointer (RBP, X29) aimed at `fake_fp` (a "frame record" above the thread's
// real stack), so that a walk from this context reads there. No calls while it is fake.
static void *stale_stack_thread(void *arg) {
    stale_stack_target_t *t = arg;
    atomic_store(&t->tid, (int32_t)syscall(SYS_gettid));
#if defined(__x86_64__)
    __asm__ volatile("push %%rbp\n\t"
                     "mov %0, %%rbp\n\t"
                     "1: pause\n\t"
                     "cmpl $0, (%1)\n\t"
                     "je 1b\n\t"
                     "pop %%rbp\n\t"
                     :
                     : "r"(t->fake_fp), "r"(&t->stop)
                     : "memory", "cc");
#elif defined(__aarch64__)
    // X29 is saved in a scratch register rather than on the stack: SP stays 16-byte aligned.
    __asm__ volatile("mov x9, x29\n\t"
                     "mov x29, %0\n\t"
                     "1: yield\n\t"
                     "ldr w10, [%1]\n\t"
                     "cbz w10, 1b\n\t"
                     "mov x29, x9\n\t"
                     :
                     : "r"(t->fake_fp), "r"(&t->stop)
                     : "x9", "x10", "memory", "cc");
#else
#error "a frame pointer to aim is needed for this architecture"
#endif
    return NULL;
}

int sw_test_walk_into_unmapped(uint64_t *frames_after, uint64_t *libunwind_frames_after, uint64_t *ring_samples,
                               uint32_t *stop_after) {
    const size_t half = 1u << 20;
    uint8_t *region = mmap(NULL, 2 * half, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED) return -errno;
    stale_stack_target_t t = {.fake_fp = (uint64_t)(uintptr_t)(region + half + half / 2)};
    atomic_store(&t.tid, 0);
    atomic_store(&t.stop, 0);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, region, half); // the thread's stack: the lower half only
    pthread_t th;
    int rc = pthread_create(&th, &attr, stale_stack_thread, &t);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        munmap(region, 2 * half);
        return -rc;
    }
    while (atomic_load(&t.tid) == 0) sched_yield();
    int32_t tid = atomic_load(&t.tid);
    sw_stack_t st;
    // While the whole region is mapped (and the table says so): the thread is known afterwards, so
    // the next capture trusts the table without reading /proc/self/maps again.
    rc = sw_capture(tid, SW_UNWIND_FRAME_POINTER, 64, 1000000000LL, &st);
    int ring = rc == 0 ? sw_ring_start(tid, 1000000, SW_RING_CLOCK_THREAD_CPU, 64, 64) : rc;
    if (rc == 0 && ring < 0) rc = ring;
    if (rc == 0) {
        struct timespec pause = {.tv_sec = 0, .tv_nsec = 20000000};
        nanosleep(&pause, NULL); // the ring learns the stack's bounds on its first ticks
        munmap(region + half, half); // the mapping shrinks; the table still holds both halves
        rc = sw_capture(tid, SW_UNWIND_FRAME_POINTER, 64, 1000000000LL, &st);
        *frames_after = rc == 0 ? st.count : 0;
        *stop_after = rc == 0 ? st.stop_reason : SW_STOP_ROOT;
        if (rc == 0) rc = sw_capture(tid, SW_UNWIND_LIBUNWIND, 64, 1000000000LL, &st);
        *libunwind_frames_after = rc == 0 ? st.count : 0;
        uint64_t before = sw_ring_taken(ring);
        // Up to 2 s: the ring ticks on the thread's CPU time, which a loaded machine hands out
        // slowly (20 ms of wall time once gave the spinning thread less than one tick).
        struct timespec step = {.tv_sec = 0, .tv_nsec = 5000000};
        for (int i = 0; i < 400 && sw_ring_taken(ring) == before; i++) nanosleep(&step, NULL);
        *ring_samples = sw_ring_taken(ring) - before;
    }
    if (ring >= 0) sw_ring_stop(ring);
    atomic_store(&t.stop, 1);
    pthread_join(th, NULL);
    munmap(region, half);
    sw_maps_rebuild();
    return rc;
}

// Distinct real return addresses: each call site of return_site() returns the address just past
// its own call instruction, which the scanner's call decoding accepts.
static __attribute__((noinline)) uint64_t return_site(void) {
    return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

int sw_test_blocked_scan_ghost(uint64_t *got, uint32_t *got_count, uint64_t *expected, uint32_t *expected_count) {
    uint64_t r[7];
    r[0] = return_site(); r[1] = return_site(); r[2] = return_site(); r[3] = return_site();
    r[4] = return_site(); r[5] = return_site(); r[6] = return_site();
    // A fake stack of its own: one 16 KiB mapping, so the outermost record lies near its top.
    size_t size = 16 * 1024;
    uint64_t *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED) return -errno;
    uint64_t top = (uint64_t)(uintptr_t)stack + size;
    uint64_t *sp = (uint64_t *)(uintptr_t)(top - 1024);
    uint64_t rec1 = (uint64_t)(uintptr_t)&sp[20], rec2 = (uint64_t)(uintptr_t)&sp[40];
    sp[0] = 7;              // a local
    sp[1] = r[0];           // the libc wrappers' return addresses, no records
    sp[2] = rec1;           // a ghost: a returned callee of the frame at rec1, its FP and return address
    sp[3] = r[6];
    sp[4] = r[1];
    sp[5] = 0;
    sp[6] = rec1;  sp[7] = r[2];    // the first live record (rec0)
    sp[20] = rec2; sp[21] = r[3];
    sp[40] = 0;    sp[41] = r[4];   // outermost
    // The PC lies in generated code (an anonymous executable page): no unwind table describes it,
    // so the walk falls back to the checked scan for frame records, which must skip the ghost.
    // (Code with a table is walked by its rows instead: the crafted words above would not match.)
    void *code = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED) {
        munmap(stack, size);
        return -errno;
    }
    uint64_t pc = (uint64_t)(uintptr_t)code + 64;
    sw_thread_syscall_t sc = {.nr = 230, .sp = (uint64_t)(uintptr_t)sp, .pc = pc};
    sw_stack_t out;
    int rc = sw_capture_blocked(0, &sc, SW_MAX_FRAMES, &out);
    munmap(stack, size);
    munmap(code, 4096);
    if (rc != 0) return rc;
    uint64_t want[] = {pc, r[0], r[1], r[2], r[3], r[4]};
    *expected_count = sizeof want / sizeof want[0];
    memcpy(expected, want, sizeof want);
    *got_count = out.count < 16 ? out.count : 16;
    memcpy(got, out.frames, *got_count * sizeof(uint64_t));
    return 0;
}

int sw_test_set_dumpable(int dumpable) {
    int was = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    if (was < 0) return -errno;
    if (prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0, 0, 0) != 0) return -errno;
    return was;
}

// ---- a stand-in for another library's enqueue hook --------------------------------------------

typedef void sw_test_job;  // as in pool_wake.c: the same function type, for UBSan's check
#if defined(__has_attribute)
#if __has_attribute(swiftcall)
#define SW_TEST_SWIFTCC __attribute__((swiftcall))
#endif
#endif
#ifndef SW_TEST_SWIFTCC
#define SW_TEST_SWIFTCC
#endif
typedef void (*test_enqueue_original_t)(sw_test_job *) SW_TEST_SWIFTCC;
typedef void (*test_enqueue_hook_t)(sw_test_job *, test_enqueue_original_t) SW_TEST_SWIFTCC;
static _Atomic uint64_t g_counting_hook_jobs;

SW_TEST_SWIFTCC static void counting_enqueue_hook(sw_test_job *job, test_enqueue_original_t original) {
    atomic_fetch_add_explicit(&g_counting_hook_jobs, 1, memory_order_relaxed);
    original(job);
}

static _Atomic(test_enqueue_hook_t) *test_hook_slot(void) {
    return (_Atomic(test_enqueue_hook_t) *)dlsym(RTLD_DEFAULT, "swift_task_enqueueGlobal_hook");
}

int sw_test_install_counting_enqueue_hook(void) {
    _Atomic(test_enqueue_hook_t) *slot = test_hook_slot();
    test_enqueue_hook_t expected = NULL;
    return slot && atomic_compare_exchange_strong(slot, &expected, counting_enqueue_hook) ? 0 : -1;
}

uint64_t sw_test_counting_enqueue_hook_jobs(void) { return atomic_load(&g_counting_hook_jobs); }

int sw_test_enqueue_hook_state(void) {
    _Atomic(test_enqueue_hook_t) *slot = test_hook_slot();
    test_enqueue_hook_t hook = slot ? atomic_load(slot) : NULL;
    return hook == counting_enqueue_hook ? 1 : hook == NULL ? 0 : -1;
}

void sw_test_remove_counting_enqueue_hook(void) {
    _Atomic(test_enqueue_hook_t) *slot = test_hook_slot();
    test_enqueue_hook_t expected = counting_enqueue_hook;
    if (slot) atomic_compare_exchange_strong(slot, &expected, NULL);
}

void *sw_test_replace_enqueue_hook(void) {
    _Atomic(test_enqueue_hook_t) *slot = test_hook_slot();
    return slot ? (void *)atomic_exchange(slot, counting_enqueue_hook) : NULL;
}

void sw_test_restore_enqueue_hook(void *hook) {
    _Atomic(test_enqueue_hook_t) *slot = test_hook_slot();
    if (slot) atomic_store(slot, (test_enqueue_hook_t)hook);
}

int sw_test_pin_self(int cpu, int idle_policy) {
    cpu_set_t set;
    if (cpu < 0) {
        // The highest CPU this thread may run on: a container's cpuset need not hold CPU n-1.
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) != 0) return -errno;
        for (int c = CPU_SETSIZE - 1; c >= 0 && cpu < 0; c--) {
            if (CPU_ISSET(c, &set)) cpu = c;
        }
        if (cpu < 0) return -EINVAL;
    }
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) return -errno;
    if (idle_policy) {
        struct sched_param param = {0};
        if (sched_setscheduler(0, SCHED_IDLE, &param) != 0) return -errno;
    }
    return 0;
}

int sw_test_release_self(void) {
    struct sched_param param = {0};
    if (sched_setscheduler(0, SCHED_OTHER, &param) != 0) return -errno;
    // The process's first thread was never pinned: its mask is what this thread may use.
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(getpid(), sizeof set, &set) != 0) return -errno;
    if (sched_setaffinity(0, sizeof set, &set) != 0) return -errno;
    return 0;
}

int sw_test_loop_epoll(int *eventfd_out) {
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) return -errno;
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0) {
        int err = errno;
        close(epfd);
        return -err;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.fd = efd};
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev) != 0) {
        int err = errno;
        close(epfd);
        close(efd);
        return -err;
    }
    *eventfd_out = efd;
    return epfd;
}

void sw_test_loop_kick(int eventfd) {
    uint64_t one = 1;
    ssize_t n = write(eventfd, &one, sizeof one);
    (void)n;
}

int sw_test_loop_sleep(int epfd, int eventfd) {
    struct epoll_event ev;
    int n = epoll_wait(epfd, &ev, 1, -1);
    if (n < 0) return -errno;
    uint64_t value;
    ssize_t got = read(eventfd, &value, sizeof value);
    (void)got;
    return n;
}

int sw_test_loop_take_events(int epfd, int eventfd) {
    struct epoll_event ev;
    int n = epoll_wait(epfd, &ev, 1, 0);
    uint64_t value;
    ssize_t got = read(eventfd, &value, sizeof value);
    (void)got;
    return n;
}

// ---- the running task, as the runtime's thread-local holds it ---------------------------------

extern void *swift_task_getCurrent(void) SW_TEST_SWIFTCC __attribute__((weak));

uint64_t sw_test_current_task(void) {
    return swift_task_getCurrent ? (uint64_t)(uintptr_t)swift_task_getCurrent() : 0;
}

uint64_t sw_test_thread_pointer(void) {
#if defined(__x86_64__)
    uint64_t tp;
    __asm__ volatile("mov %%fs:0, %0" : "=r"(tp));
    return tp;
#elif defined(__aarch64__)
    uint64_t tp;
    __asm__ volatile("mrs %0, tpidr_el0" : "=r"(tp));
    return tp;
#else
    return 0;
#endif
}
