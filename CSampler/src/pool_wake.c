// The enqueue hook. Never on a signal handler's path; on every global enqueue of the process, so
// its common path is one relaxed load and a call of what was there before.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_pool_wake.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include "sw_futex.h"
#include "sw_internal.h"

// The job is opaque here, a `void *` as in every hook of this shape (UBSan's function-type check
// compares the pointee types by name, so a test's own hook must declare the very same type).
typedef void sw_job;
// The runtime calls hooks with the Swift calling convention (`SWIFT_CC(swift)`). Compilers without
// it (the gcc portability build) get the C one, which passes these two pointers the same way on
// x86-64 and arm64.
#if defined(__has_attribute)
#if __has_attribute(swiftcall)
#define SW_SWIFTCC __attribute__((swiftcall))
#endif
#endif
#ifndef SW_SWIFTCC
#define SW_SWIFTCC
#endif
typedef void (*enqueue_original_t)(sw_job *job) SW_SWIFTCC;
typedef void (*enqueue_hook_t)(sw_job *job, enqueue_original_t original) SW_SWIFTCC;

static _Atomic(enqueue_hook_t) *g_hook_slot;   // &swift_task_enqueueGlobal_hook (see hook_slot)
static _Atomic(enqueue_hook_t) g_previous;      // the hook ours chains to (NULL: the runtime's own)
static _Atomic uint32_t g_armed;                // ARMED, plus ARMED_WAKE when a waiter must be woken
#define ARMED 1u
#define ARMED_WAKE 2u
#define ARMED_TIMER 4u
static _Atomic int64_t g_timer_delay_ns;        // how long after the enqueue the timer wakes
static int g_timer_fd = -1;                     // sw_pool_wake_timer_fd: made once, never closed
static pthread_once_t g_timer_once = PTHREAD_ONCE_INIT;
static _Atomic uint32_t g_generation;
static _Atomic uint64_t g_wakes;
static _Atomic uint64_t g_woken_at;             // CLOCK_MONOTONIC ns of the enqueue that disarmed
static pthread_mutex_t g_install_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_installs;
// Whether ours may still be called: set when installed, cleared only once the hook before it was
// put back. A hook installed on top of ours chains to ours; chaining ours to it again would loop.
static int g_in_chain;

static void wake_waiters(void) {
    atomic_fetch_add_explicit(&g_generation, 1, memory_order_release);
    sw_futex_wake_all(&g_generation);
    sw_loop_rest_kick();
}

SW_SWIFTCC static void pool_wake_hook(sw_job *job, enqueue_original_t original) {
    // The exchange only once armed: an enqueue to a busy pool writes nothing shared.
    uint32_t armed;
    if (atomic_load_explicit(&g_armed, memory_order_relaxed) &&
        (armed = atomic_exchange_explicit(&g_armed, 0, memory_order_acq_rel)) != 0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        atomic_store_explicit(&g_woken_at, (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec,
                              memory_order_relaxed);
        atomic_fetch_add_explicit(&g_wakes, 1, memory_order_relaxed);
        if (armed & ARMED_WAKE) {
            wake_waiters();
        } else {
            atomic_fetch_add_explicit(&g_generation, 1, memory_order_release);
        }
        // After the bump: the watchdog the timer wakes finds the generation moved.
        if ((armed & ARMED_TIMER) && g_timer_fd >= 0) {
            int64_t delay = atomic_load_explicit(&g_timer_delay_ns, memory_order_relaxed);
            if (delay < 1) delay = 1;
            struct itimerspec when = {.it_value = {.tv_sec = delay / 1000000000LL, .tv_nsec = delay % 1000000000LL}};
            timerfd_settime(g_timer_fd, 0, &when, NULL);
        }
    }
    sw_job_stamp_note(job);
    enqueue_hook_t previous = atomic_load_explicit(&g_previous, memory_order_acquire);
    if (previous) {
        previous(job, original);
    } else {
        original(job);
    }
}

// Weak: a binary without the concurrency runtime still links. Linked directly when it is there (a
// statically linked Swift standard library exports nothing to dlsym), else looked up.
extern enqueue_hook_t swift_task_enqueueGlobal_hook __attribute__((weak));

static _Atomic(enqueue_hook_t) *hook_slot(void) {
    if (!g_hook_slot) {
        g_hook_slot = &swift_task_enqueueGlobal_hook
            ? (_Atomic(enqueue_hook_t) *)&swift_task_enqueueGlobal_hook
            : (_Atomic(enqueue_hook_t) *)dlsym(RTLD_DEFAULT, "swift_task_enqueueGlobal_hook");
    }
    return g_hook_slot;
}

int sw_pool_wake_install(void) {
    pthread_mutex_lock(&g_install_lock);
    int result = 0;
    _Atomic(enqueue_hook_t) *slot = hook_slot();
    if (!slot) {
        result = -1;
    } else if (atomic_load(slot) != pool_wake_hook) {
        if (g_in_chain) {
            result = -2;  // another hook sits on top of ours: it may call ours; never chain to it
        } else {
            // Chain to whatever is there, with a compare-and-swap, as SwiftNIO's executor
            // take-over does, so neither silently drops the other.
            enqueue_hook_t current = atomic_load(slot);
            atomic_store(&g_previous, current);
            if (atomic_compare_exchange_strong(slot, &current, pool_wake_hook)) {
                g_in_chain = 1;
            } else {
                result = -2;
            }
        }
    }
    if (result == 0) g_installs++;
    pthread_mutex_unlock(&g_install_lock);
    return result;
}

void sw_pool_wake_uninstall(void) {
    pthread_mutex_lock(&g_install_lock);
    if (g_installs > 0 && --g_installs == 0 && g_hook_slot) {
        enqueue_hook_t ours = pool_wake_hook;
        // Put back what was there, so a later `swift_task_enqueueGlobal_hook` take-over (NIO's
        // refuses a hook already set) works once no watchdog needs ours.
        if (atomic_compare_exchange_strong(g_hook_slot, &ours, atomic_load(&g_previous))) g_in_chain = 0;
        atomic_store(&g_armed, 0);
    }
    pthread_mutex_unlock(&g_install_lock);
}

int sw_pool_wake_is_hooked(void) {
    _Atomic(enqueue_hook_t) *slot = g_hook_slot;
    return slot && atomic_load_explicit(slot, memory_order_acquire) == pool_wake_hook;
}

void sw_pool_wake_arm(int wake) {
    atomic_fetch_or_explicit(&g_armed, wake ? ARMED | ARMED_WAKE : ARMED, memory_order_release);
}

static void make_timer_fd(void) { g_timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK); }

int sw_pool_wake_timer_fd(void) {
    pthread_once(&g_timer_once, make_timer_fd);
    return g_timer_fd;
}

void sw_pool_wake_arm_after(int64_t delay_ns) {
    atomic_store_explicit(&g_timer_delay_ns, delay_ns, memory_order_relaxed);
    atomic_fetch_or_explicit(&g_armed, ARMED | ARMED_TIMER, memory_order_release);
}

// A forked child has no watchdog thread, and shares the timer with its parent: its enqueues must
// neither set the parent's timer nor wake anyone.
static void pool_wake_after_fork_in_child(void) { atomic_store(&g_armed, 0); }

__attribute__((constructor)) static void register_pool_wake_fork_handler(void) {
    pthread_atfork(NULL, NULL, pool_wake_after_fork_in_child);
}

uint32_t sw_pool_wake_generation(void) { return atomic_load_explicit(&g_generation, memory_order_acquire); }

void sw_pool_wake_all(void) { wake_waiters(); }

void sw_pool_wake_wait(uint32_t seen, int64_t timeout_ns) {
    sw_futex_wait_ns(&g_generation, seen, timeout_ns);
}

uint64_t sw_pool_wake_enqueued_at(void) { return atomic_load_explicit(&g_woken_at, memory_order_relaxed); }

uint64_t sw_pool_wake_count(void) { return atomic_load_explicit(&g_wakes, memory_order_relaxed); }

#endif // SW_PLATFORM_SAMPLES
