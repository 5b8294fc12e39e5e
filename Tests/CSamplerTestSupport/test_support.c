#include "sw_test_support.h"
#include "sw_ring.h"
#include "sw_threads.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include <dlfcn.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
