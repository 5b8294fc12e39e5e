// NUMA facts. libnuma allocates and reads sysfs on most calls, so everything a hot path needs
// (cpu -> node) is copied once into static tables that a signal handler can read.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_numa.h"

#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#define SW_NUMA_MAX_CPUS 8192
#define SW_NUMA_MAX_NODES 1024

static int16_t cpu_node[SW_NUMA_MAX_CPUS];
static int32_t cpu_count;            // entries of cpu_node that are filled
static int32_t node_ids[SW_NUMA_MAX_NODES];
static int32_t node_count;
static bool numa_ok;
static atomic_bool ready;            // release-published after the tables are complete
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

#ifndef SW_KEEP_NUMA_WARNINGS
// libnuma prints "libnuma: Warning: ..." to stderr from inside calls such as numa_node_of_cpu on
// machines with sparse or missing sysfs node entries; a monitoring library must not write to the
// service's stderr. These replace libnuma's weak defaults. They stay silent but keep libnuma's
// documented exit-on-error/-warn switches, so a program that set them still exits.
// Define SW_KEEP_NUMA_WARNINGS to keep libnuma's own messages.
void numa_warn(int num, char *fmt, ...) {
    (void)num;
    (void)fmt;
    if (numa_exit_on_warn) exit(1);
}

void numa_error(char *where) {
    (void)where;
    if (numa_exit_on_error) exit(1);
}
#endif

static bool node_known(int node) {
    for (int32_t i = 0; i < node_count; i++)
        if (node_ids[i] == node) return true;
    return false;
}

static void add_node(int node) {
    if (node < 0 || node_count >= SW_NUMA_MAX_NODES || node_known(node)) return;
    // Keep ids sorted so callers see nodes in id order.
    int32_t i = node_count++;
    while (i > 0 && node_ids[i - 1] > node) {
        node_ids[i] = node_ids[i - 1];
        i--;
    }
    node_ids[i] = node;
}

static void build_tables(void) {
    long configured = sysconf(_SC_NPROCESSORS_CONF);
    if (configured < 1) configured = 1;
    numa_ok = numa_available() >= 0;

    if (numa_ok) {
        long cpus = numa_num_configured_cpus();
        if (cpus < configured) cpus = configured;
        if (cpus > SW_NUMA_MAX_CPUS) cpus = SW_NUMA_MAX_CPUS;
        for (long cpu = 0; cpu < cpus; cpu++) {
            int node = numa_node_of_cpu((int)cpu);
            cpu_node[cpu] = (int16_t)(node >= 0 && node < SW_NUMA_MAX_NODES ? node : -1);
            add_node(cpu_node[cpu]);
        }
        cpu_count = (int32_t)cpus;
        // Nodes with memory but no CPUs still belong in the picture.
        int max_node = numa_max_node();
        for (int node = 0; node <= max_node && node < SW_NUMA_MAX_NODES; node++)
            if (numa_nodes_ptr != NULL && numa_bitmask_isbitset(numa_nodes_ptr, (unsigned)node)) add_node(node);
    }
    if (node_count == 0) {
        // No NUMA (or libnuma found nothing usable): one node 0 holding every configured CPU.
        numa_ok = false;
        long cpus = configured > SW_NUMA_MAX_CPUS ? SW_NUMA_MAX_CPUS : configured;
        for (long cpu = 0; cpu < cpus; cpu++) cpu_node[cpu] = 0;
        cpu_count = (int32_t)cpus;
        add_node(0);
    }
    atomic_store_explicit(&ready, true, memory_order_release);
}

int sw_numa_init(void) {
    pthread_once(&init_once, build_tables);
    return numa_ok ? 1 : 0;
}

int sw_numa_node_count(void) {
    sw_numa_init();
    return (int)node_count;
}

int sw_numa_node_id(int index) {
    sw_numa_init();
    return index >= 0 && index < node_count ? (int)node_ids[index] : -1;
}

// async-signal-safe: reads tables that were published before `ready` was set; never initializes.
int sw_numa_node_of_cpu(int cpu) {
    if (!atomic_load_explicit(&ready, memory_order_acquire)) return -1;
    if (cpu < 0 || cpu >= cpu_count) return -1;
    return cpu_node[cpu];
}

// The value after `key` in a meminfo text, in kB; -1 when absent.
static long long meminfo_kb(const char *text, const char *key) {
    const char *p = strstr(text, key);
    if (p == NULL) return -1;
    p += strlen(key);
    while (*p == ' ') p++;
    char *end;
    long long v = strtoll(p, &end, 10);
    return end == p ? -1 : v;
}

// A node's MemTotal and MemFree from its sysfs meminfo, read into a stack buffer: libnuma's
// numa_node_size64 reads the same file through stdio (fopen, getdelim: mallocs on every call),
// and every stall report asks for every node's free memory on the watchdog thread.
static int node_meminfo(int node, int64_t *size_bytes, int64_t *free_bytes) {
    char path[64];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", node);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    char text[512]; // MemTotal and MemFree are its first two lines
    ssize_t n = read(fd, text, sizeof text - 1);
    int e = errno;
    close(fd);
    if (n <= 0) return n < 0 ? -e : -EPROTO;
    text[n] = '\0';
    long long total = meminfo_kb(text, "MemTotal:"), avail = meminfo_kb(text, "MemFree:");
    if (total < 0 || avail < 0) return -EPROTO;
    *size_bytes = (int64_t)total * 1024;
    *free_bytes = (int64_t)avail * 1024;
    return 0;
}

int sw_numa_node_memory(int node, int64_t *size_bytes, int64_t *free_bytes) {
    if (size_bytes == NULL || free_bytes == NULL) return -EINVAL;
    sw_numa_init();
    if (!node_known(node)) return -EINVAL;
    if (numa_ok && node_meminfo(node, size_bytes, free_bytes) == 0) return 0;
    if (numa_ok) {
        long long free_mem = 0;
        long long size = numa_node_size64(node, &free_mem);
        if (size < 0) return -EINVAL;
        *size_bytes = size;
        *free_bytes = free_mem < 0 ? 0 : free_mem;
        return 0;
    }
    struct sysinfo si;
    if (sysinfo(&si) != 0) return -errno;
    *size_bytes = (int64_t)si.totalram * (int64_t)si.mem_unit;
    *free_bytes = (int64_t)si.freeram * (int64_t)si.mem_unit;
    return 0;
}

int sw_numa_node_cpus(int node, int32_t *cpus, size_t cap, size_t *count) {
    if (count == NULL || (cpus == NULL && cap != 0)) return -EINVAL;
    sw_numa_init();
    if (!node_known(node)) return -EINVAL;
    size_t n = 0;
    for (int32_t cpu = 0; cpu < cpu_count; cpu++) {
        if (cpu_node[cpu] != node) continue;
        if (n < cap) cpus[n] = cpu;
        n++;
    }
    *count = n;
    return 0;
}

// async-signal-safe in practice: glibc answers from rseq or the vDSO, else a raw getcpu syscall.
int sw_current_cpu(void) {
    int saved = errno;
    int cpu = sched_getcpu();
    int result = cpu >= 0 ? cpu : -errno;
    errno = saved;
    return result;
}

#endif // SW_PLATFORM_SAMPLES
