// A thread's system calls counted by the kernel (see sw_syscall_count.h).
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_syscall_count.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

// The tracepoint's id from tracefs, or -errno.
static long tracepoint_id(const char *event) {
    static const char *roots[] = {"/sys/kernel/tracing/events/", "/sys/kernel/debug/tracing/events/"};
    for (unsigned i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        char path[256];
        size_t n = strlen(roots[i]), m = strlen(event);
        if (n + m + 4 > sizeof path) return -ENAMETOOLONG;
        memcpy(path, roots[i], n);
        memcpy(path + n, event, m);
        memcpy(path + n + m, "/id", 4);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        char buf[32];
        ssize_t r = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (r <= 0) continue;
        buf[r] = 0;
        return strtol(buf, NULL, 10);
    }
    return -ENOENT;
}

static int open_counter(const char *event, int32_t tid) {
    long id = tracepoint_id(event);
    if (id < 0) return (int)id;
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_TRACEPOINT;
    a.config = (uint64_t)id;
    // Not exclude_kernel: raw_syscalls hands perf the kernel's registers (it would count nothing), and
    // tracefs already needs root.
    a.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int sw_syscall_counter_open(int32_t tid, sw_syscall_counter_t *c) {
    if (c == NULL || tid <= 0) return -EINVAL;
    c->all_fd = -1;
    c->sigreturn_fd = -1;
    int a = open_counter("raw_syscalls/sys_enter", tid);
    if (a < 0) return a;
    int s = open_counter("syscalls/sys_enter_rt_sigreturn", tid);
    if (s < 0) {
        close(a);
        return s;
    }
    c->all_fd = a;
    c->sigreturn_fd = s;
    return 0;
}

int sw_syscall_counter_read(const sw_syscall_counter_t *c, uint64_t *all, uint64_t *sigreturn) {
    if (c == NULL || c->all_fd < 0 || c->sigreturn_fd < 0) return -EINVAL;
    if (read(c->all_fd, all, 8) != 8) return -errno;
    if (read(c->sigreturn_fd, sigreturn, 8) != 8) return -errno;
    return 0;
}

void sw_syscall_counter_close(sw_syscall_counter_t *c) {
    if (c == NULL) return;
    if (c->all_fd >= 0) close(c->all_fd);
    if (c->sigreturn_fd >= 0) close(c->sigreturn_fd);
    c->all_fd = -1;
    c->sigreturn_fd = -1;
}

#endif // SW_PLATFORM_SAMPLES
