// libFuzzer target: every /proc task-file parser on arbitrary bytes, in buffers of the sizes the
// readers use (a real file is cut to that size and NUL-terminated the same way).
#include "proc_parse.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static void terminated(const uint8_t *data, size_t size, char *buf, size_t cap) {
    size_t n = size < cap - 1 ? size : cap - 1;
    memcpy(buf, data, n);
    buf[n] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char stat_buf[1024], status_buf[4096], syscall_buf[256], schedstat_buf[128];
    terminated(data, size, stat_buf, sizeof stat_buf);
    terminated(data, size, status_buf, sizeof status_buf);
    terminated(data, size, syscall_buf, sizeof syscall_buf);
    terminated(data, size, schedstat_buf, sizeof schedstat_buf);
    sw_thread_stat_t stat;
    (void)sw_parse_thread_stat(stat_buf, 1, &stat);
    uint64_t mask;
    (void)sw_parse_sigblk(status_buf, &mask);
    sw_thread_syscall_t call;
    (void)sw_parse_thread_syscall(syscall_buf, &call);
    uint64_t a, b, c;
    (void)sw_parse_schedstat(schedstat_buf, &a, &b, &c);
    return 0;
}
