// The C core where it cannot sample (see sw_platform.h): every entry point of include/ answers
// "not available here" the way its header documents a failure, so the Swift layers run unchanged
// and degrade as they do on a Linux host that refuses the same thing (-ENOSYS, an empty map, a
// hook that is not installed). Three things still work, because the watchdog needs them to detect
// stalls from probes alone: thread ids, the calling thread's and the process's CPU time, and the
// wake-up word the watchdog sleeps on. Portable C11 and POSIX only: this file is what builds on
// macOS.
#include "sw_platform.h"
#if !SW_PLATFORM_SAMPLES
#include "sw_async.h"
#include "sw_capture.h"
#include "sw_cpuclock.h"
#include "sw_lock_word.h"
#include "sw_loop_rest.h"
#include "sw_cpu_wake.h"
#include "sw_job_stamps.h"
#include "sw_barrier.h"
#include "sw_numa.h"
#include "sw_perf_ring.h"
#include "sw_pool_wake.h"
#include "sw_ring.h"
#include "sw_symbols.h"
#include "sw_syscall_count.h"
#include "sw_threads.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

// ---- thread ids: no kernel id to ask for portably, so ids are handed out in order of first use ----

static atomic_int_least32_t next_tid = 1;
static _Thread_local int32_t own_tid;

int32_t sw_gettid(void) {
    if (own_tid == 0) own_tid = (int32_t)atomic_fetch_add_explicit(&next_tid, 1, memory_order_relaxed);
    return own_tid;
}

int32_t sw_current_tid(void) { return sw_gettid(); }

// ---- thread facts (/proc on Linux): none ----

int sw_threads_list(int32_t *tids, size_t cap, size_t *count) {
    (void)tids; (void)cap;
    *count = 0;
    return -ENOSYS;
}
int sw_task_dir_open(void) { return -ENOSYS; }
int sw_threads_list_fd(int dirfd, int32_t *tids, size_t cap, size_t *count) {
    (void)dirfd;
    return sw_threads_list(tids, cap, count);
}
int sw_thread_stat(int32_t tid, sw_thread_stat_t *out) {
    (void)tid;
    memset(out, 0, sizeof *out);
    return -ENOSYS;
}
int sw_thread_sigblk(int32_t tid, uint64_t *mask) {
    (void)tid;
    *mask = 0;
    return -ENOSYS;
}
int sw_thread_sigpnd(int32_t tid, uint64_t *mask) {
    (void)tid;
    *mask = 0;
    return -ENOSYS;
}
int sw_thread_syscall(int32_t tid, sw_thread_syscall_t *out) {
    (void)tid;
    memset(out, 0, sizeof *out);
    return -ENOSYS;
}
int sw_thread_schedstat(int32_t tid, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *timeslices) {
    (void)tid;
    *run_ns = *wait_ns = *timeslices = 0;
    return -ENOSYS;
}
int sw_task_file_open(int32_t tid, const char *leaf) {
    (void)tid; (void)leaf;
    return -ENOSYS;
}
int sw_thread_stat_fd(int fd, int32_t tid, sw_thread_stat_t *out) {
    (void)fd;
    return sw_thread_stat(tid, out);
}
int sw_thread_syscall_fd(int fd, sw_thread_syscall_t *out) {
    (void)fd;
    return sw_thread_syscall(0, out);
}
int sw_thread_schedstat_fd(int fd, uint64_t *run_ns, uint64_t *wait_ns, uint64_t *timeslices) {
    (void)fd;
    return sw_thread_schedstat(0, run_ns, wait_ns, timeslices);
}
int sw_fd_describe(int fd, char *buf, size_t cap) {
    (void)fd;
    if (cap > 0) buf[0] = 0;
    return -ENOSYS;
}
int sw_thread_set_name(const char *name) {
    (void)name;
    return -ENOSYS;
}
int sw_process_memory(uint64_t *rss_bytes, uint64_t *vm_bytes) {
    *rss_bytes = *vm_bytes = 0;
    return -ENOSYS;
}

// ---- CPU clocks: the caller's own and the process's are POSIX; another thread's is not ----

static int clock_ns(clockid_t clock, uint64_t *ns) {
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0) return -errno;
    *ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return 0;
}

int sw_thread_cpu_time_ns(int32_t tid, uint64_t *ns) {
    *ns = 0;
    if (tid != sw_gettid()) return -ENOSYS;
    return clock_ns(CLOCK_THREAD_CPUTIME_ID, ns);
}
int sw_process_cpu_time_ns(uint64_t *ns) {
    *ns = 0;
    return clock_ns(CLOCK_PROCESS_CPUTIME_ID, ns);
}
clockid_t sw_thread_cpu_clockid(int32_t tid) {
    (void)tid;
    return (clockid_t)-1;
}

// ---- the sampler: never installed ----

int sw_sampler_install(int signo, int allow_chain) {
    (void)signo; (void)allow_chain;
    return -ENOSYS;
}
int sw_sampler_signal(void) { return 0; }
int sw_sampler_handler_state(void) { return SW_HANDLER_NOT_INSTALLED; }
int sw_sampler_reclaim(void) { return SW_ERR_NOT_INSTALLED; }
int sw_maps_refresh(void) { return -ENOSYS; }
int sw_capture(int32_t tid, sw_unwinder_t unwinder, uint32_t max_frames, int64_t timeout_ns,
               sw_stack_t *out) {
    (void)tid; (void)unwinder; (void)max_frames; (void)timeout_ns; (void)out;
    return SW_ERR_NOT_INSTALLED;
}
int sw_capture_awake(int32_t tid, sw_unwinder_t unwinder, uint32_t max_frames, int64_t timeout_ns,
                       sw_stack_t *out) {
    return sw_capture(tid, unwinder, max_frames, timeout_ns, out);
}
int sw_snapshot_hold(const int32_t *tids, size_t n, sw_unwinder_t unwinder, uint32_t max_frames,
                     int64_t timeout_ns, int64_t park_ns, sw_stack_t *outs, int *results) {
    (void)tids; (void)unwinder; (void)max_frames; (void)timeout_ns; (void)park_ns; (void)outs;
    for (size_t i = 0; i < n; i++) results[i] = SW_ERR_NOT_INSTALLED;
    return SW_ERR_NOT_INSTALLED;
}
int sw_snapshot_release(void) { return 0; }
int sw_capture_blocked(int32_t tid, const sw_thread_syscall_t *sc, uint32_t max_frames,
                       sw_stack_t *out) {
    (void)tid; (void)sc; (void)max_frames; (void)out;
    return -ENOSYS;
}
int sw_capture_blocked_into(int32_t tid, const sw_thread_syscall_t *sc, uint32_t max_frames, sw_stack_t *out,
                            void *scratch, size_t scratch_bytes) {
    (void)scratch; (void)scratch_bytes;
    return sw_capture_blocked(tid, sc, max_frames, out);
}
int sw_capture_perf(int32_t tid, uint32_t max_frames, int64_t timeout_ns, sw_stack_t *out) {
    (void)tid; (void)max_frames; (void)timeout_ns; (void)out;
    return -ENOSYS;
}
int sw_capture_self(sw_stack_t *out, uint32_t max_frames) {
    (void)max_frames;
    memset(out, 0, sizeof *out);
    return SW_ERR_INVALID;
}
void sw_request_key_set(const void *key) { (void)key; }
uint64_t sw_request_tag_read(void) { return 0; }
void sw_thread_layout_observe(void) {}
int sw_task_layout_observe(uint64_t outer, uint64_t inner) {
    (void)outer; (void)inner;
    return -1;
}
int sw_blocked_tag_state(const char **why) {
    if (why) *why = "blocked threads' requests are read on Linux only";
    return -1;
}
uint64_t sw_blocked_request_tag(int32_t tid, const sw_thread_syscall_t *sc) {
    (void)tid; (void)sc;
    return 0;
}
void sw_blocked_tag_stats(uint64_t *reads, uint64_t *tagged, uint64_t *discarded) {
    *reads = *tagged = *discarded = 0;
}
void sw_sampler_stats(sw_sampler_stats_t *out) { memset(out, 0, sizeof *out); }
// ---- enqueue stamps and running tasks: nothing to read ----
void sw_job_stamps_enable(int on) { (void)on; }
int sw_job_stamps_enabled(void) { return 0; }
uint64_t sw_job_stamp_of(uint64_t job) {
    (void)job;
    return 0;
}
int sw_task_slot_observe(void) { return -1; }
int sw_task_slot_state(const char **why) {
    if (why) *why = "pool threads' running tasks are read on Linux only";
    return -1;
}
uint64_t sw_thread_pointer_from_stack(int32_t tid, uint64_t sp) {
    (void)tid; (void)sp;
    return 0;
}
int sw_thread_running_task(int32_t tid, uint64_t tp, uint64_t *task) {
    (void)tid; (void)tp; (void)task;
    return 0;
}

// ---- sampling rings, timer and perf: never started ----

int sw_ring_start(int32_t tid, int64_t interval_ns, sw_ring_clock_t clock, uint32_t max_frames,
                  uint32_t capacity) {
    (void)tid; (void)interval_ns; (void)clock; (void)max_frames; (void)capacity;
    return SW_ERR_NOT_INSTALLED;
}
int sw_ring_set_interval(int ring, int64_t interval_ns) {
    (void)ring; (void)interval_ns;
    return SW_ERR_INVALID;
}
int sw_ring_fire_after(int ring, int64_t first_ns, int64_t interval_ns) {
    (void)ring; (void)first_ns; (void)interval_ns;
    return SW_ERR_INVALID;
}
int sw_ring_stop(int ring) {
    (void)ring;
    return SW_ERR_INVALID;
}
int64_t sw_ring_read(int ring, uint64_t *next_seq, sw_stack_t *out, uint32_t max_out, uint32_t *count) {
    (void)ring; (void)next_seq; (void)out; (void)max_out;
    *count = 0;
    return SW_ERR_INVALID;
}
uint64_t sw_ring_taken(int ring) {
    (void)ring;
    return 0;
}
int sw_perf_ring_start(int32_t tid, int64_t interval_ns, uint32_t max_frames, uint32_t capacity,
                       uint32_t stack_bytes) {
    (void)tid; (void)interval_ns; (void)max_frames; (void)capacity; (void)stack_bytes;
    return -ENOSYS;
}
int64_t sw_perf_ring_read(int ring, sw_stack_t *out, uint32_t max_out, uint32_t *count) {
    (void)ring; (void)out; (void)max_out;
    *count = 0;
    return SW_ERR_INVALID;
}
uint64_t sw_perf_ring_taken(int ring) {
    (void)ring;
    return 0;
}
int sw_perf_ring_set_interval(int ring, int64_t interval_ns) {
    (void)ring; (void)interval_ns;
    return SW_ERR_INVALID;
}
int sw_perf_ring_stop(int ring) {
    (void)ring;
    return SW_ERR_INVALID;
}
int sw_perf_ring_release(int ring) {
    (void)ring;
    return SW_ERR_INVALID;
}
void sw_perf_ring_test_refuse(int err) { (void)err; }

int sw_syscall_counter_open(int32_t tid, sw_syscall_counter_t *c) {
    (void)tid;
    c->all_fd = c->sigreturn_fd = -1;
    return -ENOSYS;
}
int sw_syscall_counter_read(const sw_syscall_counter_t *c, uint64_t *all, uint64_t *sigreturn) {
    (void)c;
    *all = *sigreturn = 0;
    return -ENOSYS;
}
void sw_syscall_counter_close(sw_syscall_counter_t *c) { (void)c; }

// ---- symbols (dladdr, the loader's unwind tables): none ----

int sw_symbol_lookup(uint64_t address, sw_symbol_info_t *out) {
    (void)address;
    memset(out, 0, sizeof *out);
    return 0;
}
int sw_symbol_range(const char *name, uint64_t *start, uint64_t *size) {
    (void)name;
    *start = *size = 0;
    return 0;
}
int sw_function_start(uint64_t pc, uint64_t *start) {
    (void)pc;
    *start = 0;
    return 0;
}
uint64_t sw_main_entry(void) { return 0; }
uint64_t sw_vdso_base(void) { return 0; }

// ---- NUMA: one node holding every CPU, as sw_numa.h degrades where libnuma says none ----

static int online_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}
int sw_numa_init(void) { return 0; }
int sw_numa_node_count(void) { return 1; }
int sw_numa_node_of_cpu(int cpu) { return cpu >= 0 && cpu < online_cpus() ? 0 : -1; }
int sw_numa_node_memory(int node, int64_t *size_bytes, int64_t *free_bytes) {
    *size_bytes = *free_bytes = 0;
    return node == 0 ? -ENOSYS : -EINVAL;
}
int sw_numa_node_cpus(int node, int32_t *cpus, size_t cap, size_t *count) {
    if (node != 0) return -EINVAL;
    size_t n = (size_t)online_cpus();
    for (size_t i = 0; i < n && i < cap; i++) cpus[i] = (int32_t)i;
    *count = n;
    return 0;
}
int sw_numa_node_id(int index) { return index == 0 ? 0 : -1; }
int sw_current_cpu(void) { return -ENOSYS; }

// ---- event loops' epoll descriptors: not watched (the watchdog keeps looking at the loops) ----

sw_loop_rest_t *sw_loop_rest_open(int *error) {
    if (error) *error = -ENOSYS;
    return NULL;
}
void sw_loop_rest_close(sw_loop_rest_t *set) { (void)set; }
int sw_loop_rest_keeps_wakes(const sw_loop_rest_t *set) {
    (void)set;
    return 0;
}
int sw_loop_rest_aio_error(const sw_loop_rest_t *set) {
    (void)set;
    return -ENOSYS;
}
int sw_loop_rest_arm(sw_loop_rest_t *set, int loop_epfd, uint64_t token) {
    (void)set; (void)loop_epfd; (void)token;
    return -ENOSYS;
}
int sw_loop_rest_disarm(sw_loop_rest_t *set, int loop_epfd) {
    (void)set; (void)loop_epfd;
    return -ENOSYS;
}
void sw_loop_rest_release_idle(sw_loop_rest_t *set) { (void)set; }
int sw_loop_rest_wait(sw_loop_rest_t *set, uint32_t seen, int64_t timeout_ns, uint64_t *fired, int max) {
    (void)set; (void)fired; (void)max;
    sw_pool_wake_wait(seen, timeout_ns);
    return 0;
}

int sw_loop_rest_add_waker(sw_loop_rest_t *set, int fd) {
    (void)set; (void)fd;
    return -ENOSYS;
}

// ---- no CPU-time wake and no expedited barrier: an idle watchdog keeps its periodic rounds ----

sw_cpu_wake_t *sw_cpu_wake_open(int avoid_signal, int *error) {
    (void)avoid_signal;
    if (error) *error = -ENOSYS;
    return NULL;
}
int sw_cpu_wake_fd(const sw_cpu_wake_t *wake) {
    (void)wake;
    return -1;
}
int sw_cpu_wake_arm(sw_cpu_wake_t *wake, int64_t cpu_ns) {
    (void)wake; (void)cpu_ns;
    return -ENOSYS;
}
void sw_cpu_wake_close(sw_cpu_wake_t *wake) { (void)wake; }
int sw_barrier_register(void) { return -ENOSYS; }
int sw_barrier_all_threads(void) { return -ENOSYS; }

// ---- the wake-up word: a condition variable where there is no futex; no enqueue hook ----

static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;
static atomic_uint_least32_t wake_generation;

int sw_pool_wake_install(void) { return -1; }
void sw_pool_wake_uninstall(void) {}
int sw_pool_wake_is_hooked(void) { return 0; }
void sw_pool_wake_arm(int wake) { (void)wake; }
void sw_pool_wake_arm_after(int64_t delay_ns) { (void)delay_ns; }
int sw_pool_wake_timer_fd(void) { return -ENOSYS; }
uint32_t sw_pool_wake_generation(void) {
    return (uint32_t)atomic_load_explicit(&wake_generation, memory_order_acquire);
}
void sw_pool_wake_all(void) {
    pthread_mutex_lock(&wake_lock);
    atomic_fetch_add_explicit(&wake_generation, 1, memory_order_release);
    pthread_cond_broadcast(&wake_cond);
    pthread_mutex_unlock(&wake_lock);
}
void sw_pool_wake_wait(uint32_t seen, int64_t timeout_ns) {
    if (timeout_ns <= 0) return;
    // Realtime, the one clock every pthread_cond_timedwait takes (macOS has no condattr_setclock):
    // a clock step only makes one wait end early or late, and the caller re-checks its own state.
    struct timeval now;
    gettimeofday(&now, NULL);
    int64_t ns = (int64_t)now.tv_usec * 1000 + timeout_ns;
    struct timespec until = {
        .tv_sec = now.tv_sec + (time_t)(ns / 1000000000),
        .tv_nsec = (long)(ns % 1000000000),
    };
    pthread_mutex_lock(&wake_lock);
    while (sw_pool_wake_generation() == seen) {
        if (pthread_cond_timedwait(&wake_cond, &wake_lock, &until) != 0) break;
    }
    pthread_mutex_unlock(&wake_lock);
}
uint64_t sw_pool_wake_enqueued_at(void) { return 0; }
uint64_t sw_pool_wake_count(void) { return 0; }

// sw_async.h: no stacks are taken here, so no async callers are read either.
static const char *const no_async = "no stacks are taken on this platform";
int sw_async_learn(uint32_t depth, const char **why) {
    (void)depth;
    if (why != NULL) *why = no_async;
    return -1;
}
int sw_async_state(const char **why) {
    if (why != NULL) *why = no_async;
    return -1;
}
void sw_async_walks_enable(int on) { (void)on; }
// sw_lock_word.h: no thread is read here, so no lock either.
uint32_t sw_lock_words_read(uint64_t addr, sw_lock_words_t *out) {
    (void)addr;
    memset(out, 0, sizeof *out);
    return 0;
}

void sw_async_chain_complete(sw_stack_t *st, uint32_t max_frames) {
    (void)st;
    (void)max_frames;
}

#endif // !SW_PLATFORM_SAMPLES
