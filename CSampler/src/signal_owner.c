// Ownership of the sampling signal: which signal, the handler it replaced (chained to for every
// signal that is not ours), and whether somebody else took it over since (an application or a
// profiler that calls sigaction after us). A leaf: it calls into no other file of CSampler, and the
// handler it installs is handed to it (signal_handler.c).
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
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
void sw_signal_chain(int sig, siginfo_t *si, void *uc) {
    atomic_fetch_add_explicit(&g_stat_chained, 1, memory_order_relaxed);
    if (!atomic_load_explicit(&g_have_prev, memory_order_acquire)) return; // nobody else wanted it: ignore, never die
    if (g_prev.sa_flags & SA_SIGINFO) {
        g_prev.sa_sigaction(sig, si, uc);
    } else if (g_prev.sa_handler != SIG_DFL && g_prev.sa_handler != SIG_IGN) {
        g_prev.sa_handler(sig);
    }
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

static int is_ours(const struct sigaction *sa, sw_signal_handler_fn handler) {
    return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == handler;
}

// Caller holds g_install_lock. Remembers what is installed now (unless it is ours) and installs ours.
static int take_signal(int signo, int allow_chain, sw_signal_handler_fn handler) {
    struct sigaction old;
    if (sigaction(signo, NULL, &old) != 0) return -errno;
    if (!is_ours(&old, handler)) {
        int has_prev = is_real_handler(&old);
        if (has_prev && !allow_chain) return SW_ERR_SIGNAL_IN_USE;
        atomic_store_explicit(&g_have_prev, 0, memory_order_release);
        g_prev = old;
        atomic_store_explicit(&g_have_prev, has_prev, memory_order_release);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(signo, &sa, NULL) != 0) return -errno;
    return 0;
}

int sw_signal_own(int signo, int allow_chain, sw_signal_handler_fn handler, int (*prime)(void)) {
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
    int rc = prime();
    if (rc != 0) {
        pthread_mutex_unlock(&g_install_lock);
        return rc;
    }
    static int atfork_done;
    if (!atfork_done) {
        pthread_atfork(NULL, NULL, after_fork_in_child);
        atfork_done = 1;
    }
    rc = take_signal(signo, allow_chain, handler);
    if (rc == 0) atomic_store(&g_signo, signo);
    pthread_mutex_unlock(&g_install_lock);
    return rc;
}

int sw_sampler_signal(void) {
    return atomic_load(&g_signo);
}

int sw_signal_state(sw_signal_handler_fn handler) {
    int signo = atomic_load(&g_signo);
    if (signo == 0) return SW_HANDLER_NOT_INSTALLED;
    struct sigaction now;
    if (sigaction(signo, NULL, &now) != 0) return -errno;
    if (is_ours(&now, handler)) return SW_HANDLER_OURS;
    if (is_real_handler(&now)) return SW_HANDLER_REPLACED;
    return now.sa_handler == SIG_IGN ? SW_HANDLER_IGNORED : SW_HANDLER_DEFAULT;
}

int sw_signal_reclaim(sw_signal_handler_fn handler) {
    pthread_mutex_lock(&g_install_lock);
    int signo = atomic_load(&g_signo);
    int rc = signo == 0 ? SW_ERR_NOT_INSTALLED : take_signal(signo, 1, handler);
    pthread_mutex_unlock(&g_install_lock);
    return rc;
}

pid_t sw_signal_owner_pid(void) {
    return g_pid;
}

uint64_t sw_signal_chained_count(void) {
    return atomic_load_explicit(&g_stat_chained, memory_order_relaxed);
}

#endif // SW_PLATFORM_SAMPLES
