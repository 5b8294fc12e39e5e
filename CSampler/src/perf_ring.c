// Signal-free periodic sampling (see sw_perf_ring.h): one perf event per sampled thread, its ring
// read by the watchdog. The kernel walks the user call chain by frame pointers at every sample;
// where that chain stops early (code without frame pointers: Debian's libc, libcrypto, zlib), the
// registers and the stack copy taken with the same sample feed the hybrid walk (unwind_walk.c,
// guarded: it runs off the sampled thread), as sw_capture_perf does for one-off captures.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_perf_ring.h"
#include "sw_internal.h"
#include "sw_perf_regs.h"
#include "sw_unwind_table.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>


// The kernel's default cap on a call chain (sysctl kernel.perf_event_max_stack): asking for more
// makes perf_event_open fail with EOVERFLOW.
#define SW_PR_KERNEL_MAX_STACK 127u
#define SW_PR_MAX_STACK_BYTES 65528u

typedef struct sw_perf_ring {
    int fd;                 // -1: free
    int32_t tid;
    uint32_t max_frames;
    uint32_t stack_bytes;
    uint64_t sample_type;
    uint8_t *map;
    size_t map_len;
    uint64_t taken;         // samples read plus samples lost
    uint8_t *copy;          // one sample's stack copy, contiguous (the ring's data wraps)
} sw_perf_ring_t;

static sw_perf_ring_t g_prings[SW_MAX_PERF_RINGS];
static pthread_mutex_t g_prings_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int g_refuse;
static int g_prings_ready;

void sw_perf_ring_test_refuse(int err) { atomic_store(&g_refuse, err); }

static void prings_init_locked(void) {
    if (g_prings_ready) return;
    for (int i = 0; i < SW_MAX_PERF_RINGS; i++) g_prings[i].fd = -1;
    g_prings_ready = 1;
}

static sw_perf_ring_t *ring_at(int ring) {
    if (ring < 0 || ring >= SW_MAX_PERF_RINGS || !g_prings_ready) return NULL;
    sw_perf_ring_t *r = &g_prings[ring];
    return r->fd < 0 ? NULL : r;
}

int sw_perf_ring_start(int32_t tid, int64_t interval_ns, uint32_t max_frames, uint32_t capacity,
                       uint32_t stack_bytes) {
    if (tid <= 0 || interval_ns <= 0 || max_frames == 0 || capacity == 0 || capacity > 4096 ||
        stack_bytes > SW_PR_MAX_STACK_BYTES || (stack_bytes & 7) != 0) {
        return SW_ERR_INVALID;
    }
    int refuse = atomic_load(&g_refuse);
    if (refuse != 0) return -refuse;
    if (max_frames > SW_MAX_FRAMES) max_frames = SW_MAX_FRAMES;
    uint32_t chain = max_frames < SW_PR_KERNEL_MAX_STACK ? max_frames : SW_PR_KERNEL_MAX_STACK;
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = (uint64_t)interval_ns;
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
    if (stack_bytes > 0) {
        a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a.sample_regs_user = SW_PERF_REGS;
        a.sample_stack_user = stack_bytes;
    }
    a.sample_max_stack = (uint16_t)chain;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.exclude_callchain_kernel = 1;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    a.disabled = 1;
    // Nobody polls the ring: a wake-up is never due (the watermark is never reached first).
    a.watermark = 1;
    a.wakeup_watermark = UINT32_MAX;
    // One sample: header, ip, pid/tid, time, chain (nr, context marker, frames), regs, stack copy.
    uint64_t per = 8 + 8 + 8 + 8 + 8 + 8 * ((uint64_t)chain + 2) +
                   (stack_bytes > 0 ? 8 + 8 * SW_PERF_NREGS + 8 + stack_bytes + 8 : 0);
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0) page = 4096;
    uint64_t pages = 1;
    while (pages * (uint64_t)page < per * capacity + per) pages *= 2; // a power of two, as perf wants
    pthread_mutex_lock(&g_prings_lock);
    prings_init_locked();
    int idx = -1;
    for (int i = 0; i < SW_MAX_PERF_RINGS; i++) {
        if (g_prings[i].fd < 0) { idx = i; break; }
    }
    if (idx < 0) {
        pthread_mutex_unlock(&g_prings_lock);
        return SW_ERR_BUSY;
    }
    int fd = (int)syscall(SYS_perf_event_open, &a, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        pthread_mutex_unlock(&g_prings_lock);
        return e == ESRCH ? SW_ERR_THREAD_GONE : -e;
    }
    size_t len = (size_t)page * (size_t)(1 + pages);
    uint8_t *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    uint8_t *copy = stack_bytes > 0 ? mmap(NULL, stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                    : NULL;
    if (map == MAP_FAILED || copy == MAP_FAILED) {
        int e = errno; // EPERM: over the unprivileged perf mlock allowance (perf_event_mlock_kb)
        if (map != MAP_FAILED) munmap(map, len);
        if (copy != MAP_FAILED && copy != NULL) munmap(copy, stack_bytes);
        close(fd);
        pthread_mutex_unlock(&g_prings_lock);
        return -e;
    }
    sw_perf_ring_t *r = &g_prings[idx];
    r->fd = fd;
    r->tid = tid;
    r->max_frames = max_frames;
    r->stack_bytes = stack_bytes;
    r->sample_type = a.sample_type;
    r->map = map;
    r->map_len = len;
    r->taken = 0;
    r->copy = copy;
    sw_maps_rebuild(); // the thread's stack and objects in the tables the off-thread walk reads
    if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
        int e = errno;
        munmap(map, len);
        if (copy != NULL) munmap(copy, stack_bytes);
        close(fd);
        r->fd = -1;
        pthread_mutex_unlock(&g_prings_lock);
        return -e;
    }
    pthread_mutex_unlock(&g_prings_lock);
    return idx;
}

// Copies `n` bytes at ring offset `off` (the data area wraps).
static void ring_copy(const uint8_t *data, uint64_t size, uint64_t off, void *dst, uint64_t n) {
    uint64_t at = off % size;
    uint64_t first = size - at < n ? size - at : n;
    memcpy(dst, data + at, first);
    if (first < n) memcpy((uint8_t *)dst + first, data, n - first);
}

// One PERF_RECORD_SAMPLE at ring offset `at` (after its header) into `out`. Returns 1 when stored.
static int decode_sample(sw_perf_ring_t *r, const uint8_t *data, uint64_t size, uint64_t at, uint64_t end,
                         sw_stack_t *out) {
    uint64_t ip, pidtid, time, nr;
    ring_copy(data, size, at, &ip, 8);
    ring_copy(data, size, at + 8, &pidtid, 8);
    ring_copy(data, size, at + 16, &time, 8);
    ring_copy(data, size, at + 24, &nr, 8);
    at += 32;
    if (at + 8 * nr > end) return 0;
    out->tid = (int32_t)(pidtid >> 32);
    out->taken_at_ns = time;
    out->handler_ns = 0;
    out->latency_ns = 0;
    out->sp = 0;
    out->unwinder = SW_UNWIND_FRAME_POINTER;
    out->driver = SW_DRIVER_PERF;
    out->leaf_word_count = 0;
    out->leaf_caller_recovered = 0;
    out->table_frames = 0;
    sw_stack_clear_async(out);
    out->task_id = 0;
    out->task_priority = 0;
    out->request_tag = 0; // the interrupted task is not readable from here
    out->stack_known = 1;
    // The kernel's chain: context markers (PERF_CONTEXT_USER) are not frames.
    uint32_t n = 0;
    for (uint64_t i = 0; i < nr; i++) {
        uint64_t pc;
        ring_copy(data, size, at + 8 * i, &pc, 8);
        if (pc >= (uint64_t)PERF_CONTEXT_MAX) continue;
        if (n < r->max_frames) out->frames[n++] = sw_arch_code_address(pc);
    }
    at += 8 * nr;
    if (n == 0) out->frames[n++] = ip;
    out->count = n;
    // The chain ends where the kernel's frame-pointer walk ended: whole unless cut at the limit,
    // or unless the walk below finds it stopped early.
    out->stop_reason = n >= r->max_frames ? SW_STOP_FRAME_LIMIT : SW_STOP_ROOT;
    out->truncated = out->stop_reason != SW_STOP_ROOT;
    if (r->stack_bytes == 0) return 1;
    uint64_t abi, regs[SW_PERF_NREGS], stack_size, dyn = 0;
    ring_copy(data, size, at, &abi, 8);
    at += 8;
    if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
        ring_copy(data, size, at, regs, sizeof regs);
        at += sizeof regs;
    }
    ring_copy(data, size, at, &stack_size, 8);
    at += 8;
    if (abi == PERF_SAMPLE_REGS_ABI_NONE || stack_size == 0 || stack_size > r->stack_bytes) return 1;
    ring_copy(data, size, at + stack_size, &dyn, 8);
    if (dyn > stack_size) dyn = stack_size;
    ring_copy(data, size, at, r->copy, dyn);
    uint64_t sp = regs[SW_PERF_SP];
    out->sp = sp;
    // The hybrid walk on the copy: frame records where the code keeps them, unwind tables where it
    // does not. Kept when it reaches the root, or goes further than the kernel's chain.
    sw_walk_regs_t wr = {.pc = regs[SW_PERF_PC], .sp = sp, .fp = regs[SW_PERF_FP], .fp_known = 1};
#if defined(__aarch64__)
    wr.lr = sw_arch_code_address(regs[SW_PERF_LR]);
    wr.lr_known = 1;
#endif
    sw_walk_mem_t mem = {.lo = sp, .hi = sp + (dyn & ~7ULL), .copy = r->copy, .base = sp, .guard_tables = 1,
                         .deadline_ns = sw_now_ns() + 20000000};
    uint64_t walked[SW_MAX_FRAMES];
    uint32_t count = 0;
    sw_walk_result_t res = {0};
    sw_walk_guarded(&wr, &mem, 0, walked, &count, r->max_frames, &res);
    uint8_t stop = res.stop == SW_STOP_NEED_FP || res.stop == SW_STOP_NO_ROW_AT_PC ? SW_STOP_BAD_LINK : res.stop;
    if (stop == SW_STOP_ROOT || count > out->count) {
        memcpy(out->frames, walked, sizeof(uint64_t) * count);
        out->count = count;
        out->stop_reason = stop;
        out->truncated = stop != SW_STOP_ROOT;
        out->table_frames = (uint8_t)(res.table_frames > 255 ? 255 : res.table_frames);
        sw_stack_take_async(out, &res);
    }
    // Otherwise the kernel's chain (frame records read from the live stack) went further: the copy
    // ended first, or the walk met a frame the chain passed through.
    return 1;
}

int64_t sw_perf_ring_read(int ring, sw_stack_t *out, uint32_t max_out, uint32_t *count) {
    if (count == NULL) return SW_ERR_INVALID;
    *count = 0;
    pthread_mutex_lock(&g_prings_lock);
    sw_perf_ring_t *r = ring_at(ring);
    pthread_mutex_unlock(&g_prings_lock);
    if (r == NULL || (out == NULL && max_out > 0)) return SW_ERR_INVALID;
    struct perf_event_mmap_page *meta = (struct perf_event_mmap_page *)r->map;
    const uint8_t *data = r->map + meta->data_offset;
    uint64_t size = meta->data_size;
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    int64_t lost = 0;
    while (tail + sizeof(struct perf_event_header) <= head && *count < max_out) {
        struct perf_event_header h;
        ring_copy(data, size, tail, &h, sizeof h);
        if (h.size < sizeof h || tail + h.size > head) break;
        if (h.type == PERF_RECORD_SAMPLE) {
            if (decode_sample(r, data, size, tail + sizeof h, tail + h.size, &out[*count])) (*count)++;
        } else if (h.type == PERF_RECORD_LOST) {
            uint64_t n; // id, lost
            ring_copy(data, size, tail + sizeof h + 8, &n, 8);
            lost += (int64_t)n;
        }
        tail += h.size;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    r->taken += *count + (uint64_t)lost;
    for (uint32_t i = 0; i < *count; i++) sw_recover_leaf_caller(&out[i]);
    return lost;
}

uint64_t sw_perf_ring_taken(int ring) {
    pthread_mutex_lock(&g_prings_lock);
    sw_perf_ring_t *r = ring_at(ring);
    uint64_t n = r == NULL ? 0 : r->taken;
    pthread_mutex_unlock(&g_prings_lock);
    return n;
}

int sw_perf_ring_set_interval(int ring, int64_t interval_ns) {
    if (interval_ns <= 0) return SW_ERR_INVALID;
    pthread_mutex_lock(&g_prings_lock);
    sw_perf_ring_t *r = ring_at(ring);
    uint64_t period = (uint64_t)interval_ns;
    int rc = r == NULL ? SW_ERR_INVALID : ioctl(r->fd, PERF_EVENT_IOC_PERIOD, &period) == 0 ? 0 : -errno;
    pthread_mutex_unlock(&g_prings_lock);
    return rc;
}

int sw_perf_ring_stop(int ring) {
    pthread_mutex_lock(&g_prings_lock);
    sw_perf_ring_t *r = ring_at(ring);
    int rc = r == NULL ? SW_ERR_INVALID : ioctl(r->fd, PERF_EVENT_IOC_DISABLE, 0) == 0 ? 0 : -errno;
    pthread_mutex_unlock(&g_prings_lock);
    return rc;
}

int sw_perf_ring_release(int ring) {
    pthread_mutex_lock(&g_prings_lock);
    sw_perf_ring_t *r = ring_at(ring);
    if (r == NULL) {
        pthread_mutex_unlock(&g_prings_lock);
        return SW_ERR_INVALID;
    }
    munmap(r->map, r->map_len);
    if (r->copy != NULL) munmap(r->copy, r->stack_bytes);
    close(r->fd);
    r->fd = -1;
    r->map = NULL;
    r->copy = NULL;
    pthread_mutex_unlock(&g_prings_lock);
    return 0;
}

#endif // SW_PLATFORM_SAMPLES
