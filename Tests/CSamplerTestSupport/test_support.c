#include "sw_test_support.h"

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
