// NUMA facts through libnuma. Degrades to "one node holding every CPU" where NUMA is unavailable.
#ifndef SW_NUMA_H
#define SW_NUMA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Builds the cpu -> node table (libnuma allocates: never call from a handler). Idempotent, thread-safe.
/// Returns 1 when libnuma reports NUMA available, 0 when the fallback single-node view is used.
int sw_numa_init(void);

/// Number of configured NUMA nodes (>= 1).
int sw_numa_node_count(void);

/// Node of `cpu` from the table built by sw_numa_init; -1 when unknown. Async-signal-safe (table lookup).
int sw_numa_node_of_cpu(int cpu);

/// Memory size and free memory of `node` in bytes. Returns 0 or -errno (-EINVAL: no such node).
int sw_numa_node_memory(int node, int64_t *size_bytes, int64_t *free_bytes);

/// CPUs of `node` into `cpus` (up to `cap`); `*count` receives how many there are. Returns 0 or -errno.
int sw_numa_node_cpus(int node, int32_t *cpus, size_t cap, size_t *count);

/// Id of the `index`-th node (0 <= index < sw_numa_node_count()); node ids may be sparse. -1 when out of range.
int sw_numa_node_id(int index);

/// The CPU the calling thread is running on now (sched_getcpu), or -errno.
/// Async-signal-safe in practice: a vDSO/rseq read or a raw getcpu syscall, no locks.
int sw_current_cpu(void);

#ifdef __cplusplus
}
#endif
#endif
