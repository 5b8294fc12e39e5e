// The watchdog's wake on CPU use (see sw_cpu_wake.h). Never on a signal handler's path.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_cpu_wake.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>
#include "sw_threads.h"

struct sw_cpu_wake {
    timer_t timer;
    int fd;
};

sw_cpu_wake_t *sw_cpu_wake_open(int avoid_signal, int *error) {
    int signo = SIGRTMAX;
    if (signo == avoid_signal) signo--;
    sw_cpu_wake_t *wake = calloc(1, sizeof *wake);
    if (wake == NULL) {
        if (error) *error = -ENOMEM;
        return NULL;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    // Blocked before the timer exists: an expiry can never meet the signal's default action
    // (which ends the process) on this thread.
    int rc = pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (rc != 0) {
        if (error) *error = -rc;
        free(wake);
        return NULL;
    }
    wake->fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (wake->fd < 0) {
        if (error) *error = -errno;
        free(wake);
        return NULL;
    }
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = signo;
    sev._sigev_un._tid = sw_gettid();
    if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &sev, &wake->timer) != 0) {
        if (error) *error = -errno;
        close(wake->fd);
        free(wake);
        return NULL;
    }
    return wake;
}

int sw_cpu_wake_fd(const sw_cpu_wake_t *wake) { return wake->fd; }

// Reads every queued expiry off the descriptor: 1 when there was one.
static int take_expiries(sw_cpu_wake_t *wake) {
    int taken = 0;
    struct signalfd_siginfo info;
    while (read(wake->fd, &info, sizeof info) == (ssize_t)sizeof info) taken = 1;
    return taken;
}

int sw_cpu_wake_arm(sw_cpu_wake_t *wake, int64_t cpu_ns) {
    int pending = take_expiries(wake);
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    if (cpu_ns > 0) {
        spec.it_value.tv_sec = (time_t)(cpu_ns / 1000000000LL);
        spec.it_value.tv_nsec = (long)(cpu_ns % 1000000000LL);
    }
    // Relative to the process's CPU time now: expires after that much more is used.
    if (timer_settime(wake->timer, 0, &spec, NULL) != 0) return -errno;
    return pending;
}

void sw_cpu_wake_close(sw_cpu_wake_t *wake) {
    if (wake == NULL) return;
    timer_delete(wake->timer);
    (void)take_expiries(wake);
    close(wake->fd);
    free(wake);
}

#endif // SW_PLATFORM_SAMPLES
