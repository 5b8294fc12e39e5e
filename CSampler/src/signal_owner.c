// Ownership of the sampling signal: installing the handler, chaining to the one it replaced, and
// noticing when somebody else takes the signal over (an application or a profiler that calls
// sigaction after us). The handler itself is one small dispatcher: request answers go to
// request_slots.c, timer ticks to ring.c, everything else to the previous handler.
#include "sw_internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static _Atomic int g_signo;
static pid_t g_pid;
// The handler we replaced. Written under g_install_lock before our handler is installed (or while
// reclaiming: then a chained signal may see the old or the new one, either a valid handler).
static struct sigaction g_prev;
static _Atomic int g_have_prev;
static pthread_mutex_t g_install_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t g_stat_chained;

// async-signal-safe as long as the previous handler is.
static void chain(int sig, siginfo_t *si, void *uc) {
    atomic_fetch_add_explicit(&g_stat_chained, 1, memory_order_relaxed);
    if (!atomic_load_explicit(&g_have_prev, memory_order_acquire)) return; // nobody else wanted it: ignore, never die
    if (g_prev.sa_flags & SA_SIGINFO) {
        g_prev.sa_sigaction(sig, si, uc);
    } else if (g_prev.sa_handler != SIG_DFL && g_prev.sa_handler != SIG_IGN) {
        g_prev.sa_handler(sig);
    }
}

// async-signal-safe: the signal handler itself. errno is saved and restored.
static void sw_signal_handler(int sig, siginfo_t *si, void *uc) {
    int saved_errno = errno;
    if (si != NULL && si->si_code == SI_QUEUE && si->si_pid == g_pid) {
        uint64_t cookie = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
        if ((cookie >> 48) == SW_COOKIE_MAGIC) {
            sw_capture_answer(cookie, uc);
            errno = saved_errno;
            return;
        }
    } else if (si != NULL && si->si_code == SI_TIMER) {
        uint64_t cookie = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
        if ((cookie >> 48) == SW_RING_COOKIE_MAGIC) {
            sw_ring_on_signal(cookie, uc);
            errno = saved_errno;
            return;
        }
    }
    chain(sig, si, uc);
    errno = saved_errno;
}

// The child's pid differs: request cookies are accepted from it alone. Its only thread may not
// inherit the install lock held by a thread that is gone, nor requests that nobody will answer.
static void after_fork_in_child(void) {
    g_pid = getpid();
    pthread_mutex_init(&g_install_lock, NULL);
}

static int is_real_handler(const struct sigaction *sa) {
    return (sa->sa_flags & SA_SIGINFO) ? sa->sa_sigaction != NULL
                                       : (sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN);
}

static int is_ours(const struct sigaction *sa) {
    return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == sw_signal_handler;
}

// Caller holds g_install_lock. Remembers what is installed now (unless it is ours) and installs ours.
static int take_signal(int signo, int allow_chain) {
    struct sigaction old;
    if (sigaction(signo, NULL, &old) != 0) return -errno;
    if (!is_ours(&old)) {
        int has_prev = is_real_handler(&old);
        if (has_prev && !allow_chain) return SW_ERR_SIGNAL_IN_USE;
        atomic_store_explicit(&g_have_prev, 0, memory_order_release);
        g_prev = old;
        atomic_store_explicit(&g_have_prev, has_prev, memory_order_release);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sw_signal_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(signo, &sa, NULL) != 0) return -errno;
    return 0;
}

int sw_sampler_install(int signo, int allow_chain) {
    if (signo <= 0 || signo >= NSIG || signo == SIGKILL || signo == SIGSTOP || signo == SIGSEGV ||
        signo == SIGBUS || signo == SIGILL || signo == SIGFPE || signo == SIGABRT || signo == SIGTRAP ||
        signo == SIGSYS) {
        return SW_ERR_INVALID; // never claim a fatal signal: crash handlers own those
    }
    pthread_mutex_lock(&g_install_lock);
    int current = atomic_load(&g_signo);
    if (current != 0) {
        pthread_mutex_unlock(&g_install_lock);
        return current == signo ? 0 : -EBUSY;
    }
    struct sigaction old;
    if (sigaction(signo, NULL, &old) != 0) {
        int e = errno;
        pthread_mutex_unlock(&g_install_lock);
        return -e;
    }
    if (is_real_handler(&old) && !allow_chain) {
        pthread_mutex_unlock(&g_install_lock);
        return SW_ERR_SIGNAL_IN_USE;
    }
    g_pid = getpid();
    // Prime everything that allocates or locks on first use, outside any handler.
    int rc = sw_maps_rebuild();
    if (rc == 0) rc = sw_remote_unwind_init() == 0 ? 0 : SW_ERR_NOT_INSTALLED;
    if (rc != 0) {
        pthread_mutex_unlock(&g_install_lock);
        return rc;
    }
    (void)sw_now_ns();
    static int atfork_done;
    if (!atfork_done) {
        pthread_atfork(NULL, NULL, after_fork_in_child);
        atfork_done = 1;
    }
    rc = take_signal(signo, allow_chain);
    if (rc == 0) atomic_store(&g_signo, signo);
    pthread_mutex_unlock(&g_install_lock);
    return rc;
}

int sw_sampler_signal(void) {
    return atomic_load(&g_signo);
}

int sw_sampler_handler_state(void) {
    int signo = atomic_load(&g_signo);
    if (signo == 0) return SW_HANDLER_NOT_INSTALLED;
    struct sigaction now;
    if (sigaction(signo, NULL, &now) != 0) return -errno;
    if (is_ours(&now)) return SW_HANDLER_OURS;
    if (is_real_handler(&now)) return SW_HANDLER_REPLACED;
    return now.sa_handler == SIG_IGN ? SW_HANDLER_IGNORED : SW_HANDLER_DEFAULT;
}

int sw_sampler_reclaim(void) {
    pthread_mutex_lock(&g_install_lock);
    int signo = atomic_load(&g_signo);
    int rc = signo == 0 ? SW_ERR_NOT_INSTALLED : take_signal(signo, 1);
    pthread_mutex_unlock(&g_install_lock);
    return rc;
}

pid_t sw_signal_owner_pid(void) {
    return g_pid;
}

uint64_t sw_signal_chained_count(void) {
    return atomic_load_explicit(&g_stat_chained, memory_order_relaxed);
}
