// TEMPORARY minimal versions for the capture work; replaced by the full implementation.
#include "sw_threads.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int32_t sw_gettid(void) { return (int32_t)syscall(SYS_gettid); }

int sw_thread_sigblk(int32_t tid, uint64_t *mask) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? -ESRCH : -errno;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -ESRCH;
    buf[n] = 0;
    char *p = strstr(buf, "SigBlk:");
    if (!p) return -EINVAL;
    unsigned long long m = 0;
    sscanf(p + 7, "%llx", &m);
    *mask = m;
    return 0;
}

int sw_thread_syscall(int32_t tid, sw_thread_syscall_t *out) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? -ESRCH : -errno;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -ESRCH;
    buf[n] = 0;
    memset(out, 0, sizeof *out);
    if (strncmp(buf, "running", 7) == 0) { out->nr = -2; return 0; }
    long long nr;
    unsigned long long a[8] = {0};
    int k = sscanf(buf, "%lld %llx %llx %llx %llx %llx %llx %llx %llx", &nr, &a[0], &a[1], &a[2], &a[3], &a[4], &a[5], &a[6], &a[7]);
    out->nr = nr;
    if (nr == -1 && k >= 3) { out->sp = a[0]; out->pc = a[1]; return 0; }
    for (int i = 0; i < 6; i++) out->args[i] = a[i];
    out->sp = a[6]; out->pc = a[7];
    return 0;
}
