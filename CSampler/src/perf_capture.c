// The stack of a running thread without a signal: the kernel samples it (perf_event_open, a
// task-clock event on that one thread, user registers and a copy of its user stack) and the walk
// runs here on the copy. For threads that block every signal — a signal-based capture cannot
// reach them — and for threads where a signal must not land.
//
// Refused where perf_event_open is (perf_event_paranoid > 2, seccomp in containers): the caller
// gets -errno and says so.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_internal.h"
#include "sw_perf_regs.h"
#include "sw_unwind_table.h"

#include <errno.h>
#include <stdatomic.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

// Bytes of user stack the kernel copies with the sample: the walk reads nothing beyond them.
#define SW_PERF_STACK_BYTES (32u * 1024u)
// Data pages of the ring: one sample (registers + stack copy) must fit whole.
#define SW_PERF_DATA_PAGES 16u


static int64_t perf_open(int32_t tid, int exclude_kernel) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.sample_period = 1000000; // 1 ms of the thread's CPU time: a running thread answers at once
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
    a.sample_regs_user = SW_PERF_REGS;
    a.sample_stack_user = SW_PERF_STACK_BYTES;
    a.exclude_kernel = (uint64_t)exclude_kernel;
    a.exclude_hv = 1;
    a.disabled = 1;
    a.wakeup_events = 1;
    return syscall(SYS_perf_event_open, &a, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

// Copies `n` bytes at ring offset `off` (the data area wraps).
static void ring_copy(const uint8_t *data, uint64_t size, uint64_t off, void *dst, uint64_t n) {
    uint8_t *d = dst;
    for (uint64_t i = 0; i < n; i++) d[i] = data[(off + i) % size];
}

// The sample landed where no unwind row describes the code: a PLT stub (an unoptimised Swift loop
// calls the runtime through one on every iteration), generated code. As the signal handler does
// (stack_fill.c), the first frame record is taken from FP, the words between SP and it are kept for
// sw_recover_leaf_caller (the stub's or frameless leaf's caller sits there), and the hybrid walk
// goes on above the record. Before, such a sample was its PC alone: unnamed, and its stall's
// function lost. Reads only the copy [sp, mem->hi).
static void walk_past_rowless_pc(sw_stack_t *out, const sw_walk_mem_t *mem, const uint8_t *copy, uint64_t sp,
                                 uint64_t fp, uint64_t lr, uint32_t max_frames, sw_walk_result_t *res) {
    uint64_t f = fp & ~SW_ASYNC_FP_BIT;
    out->leaf_word_count = 0;
#if !SW_ARCH_LEAF_CALLER_IN_LR
    (void)lr;
    uint64_t limit = sp + 8 * 8;
    if (f >= sp && f < limit) limit = f;
    if (limit > mem->hi) limit = mem->hi;
    for (uint64_t a = sp; a + 8 <= limit; a += 8) memcpy(&out->leaf_words[out->leaf_word_count++], copy + (a - sp), 8);
#else
    out->leaf_words[out->leaf_word_count++] = lr;
#endif
    if (out->count != 1 || max_frames < 2 || f < sp || f + 16 > mem->hi || (f & 7) != 0) {
        out->stop_reason = SW_STOP_BAD_LINK;
    } else {
        uint64_t saved, ra;
        memcpy(&saved, copy + (f - sp), 8);
        memcpy(&ra, copy + (f + 8 - sp), 8);
        ra = sw_arch_code_address(ra);
        if (ra == 0) {
            out->stop_reason = SW_STOP_ROOT;
        } else {
            out->frames[out->count++] = ra;
            sw_walk_regs_t up = {.pc = ra, .sp = f + 16, .fp = saved, .fp_known = 1};
            sw_walk_result_t more = {0};
            sw_walk(&up, mem, 1, out->frames, &out->count, max_frames, &more);
            sw_stack_take_async(out, &more);
            more.table_frames += res->table_frames;
            *res = more;
            out->stop_reason = more.stop == SW_STOP_NEED_FP ? SW_STOP_BAD_LINK : more.stop;
        }
    }
    sw_recover_leaf_caller(out);
}

int sw_capture_perf(int32_t tid, uint32_t max_frames, int64_t timeout_ns, sw_stack_t *out) {
    if (out == NULL || tid <= 0 || max_frames == 0 || timeout_ns <= 0) return SW_ERR_INVALID;
    if (max_frames > SW_MAX_FRAMES) max_frames = SW_MAX_FRAMES;
    memset(out, 0, offsetof(sw_stack_t, frames));
    out->task_id = 0;
    out->task_priority = 0;
    out->request_tag = 0; // the kernel's sample: the thread's task is not readable from here
    out->tid = tid;
    out->unwinder = SW_UNWIND_FRAME_POINTER;
    out->driver = SW_DRIVER_PERF;
    int64_t start = sw_now_ns(), deadline = start + timeout_ns;
    // Counting the thread's time in the kernel too, a thread inside one long system call (a read
    // of a large cached file, which no signal interrupts) is sampled there: the sample's user
    // registers and stack are those it entered the call with. Where that needs more privilege
    // than the process has (perf_event_paranoid 2 without CAP_PERFMON), user time only.
    // The refusal is kept: it does not change while the process runs.
    static _Atomic int kernel_refused;
    int fd = -1;
    if (!atomic_load_explicit(&kernel_refused, memory_order_relaxed)) {
        fd = (int)perf_open(tid, 0);
        if (fd < 0 && (errno == EACCES || errno == EPERM)) atomic_store_explicit(&kernel_refused, 1, memory_order_relaxed);
    }
    if (fd < 0 && atomic_load_explicit(&kernel_refused, memory_order_relaxed)) fd = (int)perf_open(tid, 1);
    if (fd < 0) return errno == ESRCH ? SW_ERR_THREAD_GONE : -errno;
    long page = sysconf(_SC_PAGESIZE);
    size_t len = (size_t)page * (1 + SW_PERF_DATA_PAGES);
    uint8_t *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        int e = errno;
        close(fd);
        return -e;
    }
    struct perf_event_mmap_page *meta = (struct perf_event_mmap_page *)map;
    const uint8_t *data = map + meta->data_offset;
    uint64_t size = meta->data_size;
    int rc = SW_ERR_TIMED_OUT;
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    uint64_t tail = 0;
    while (rc == SW_ERR_TIMED_OUT) {
        uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
        while (tail + sizeof(struct perf_event_header) <= head) {
            struct perf_event_header h;
            ring_copy(data, size, tail, &h, sizeof h);
            if (h.size == 0) break;
            if (h.type == PERF_RECORD_SAMPLE) {
                // ip; regs_user: abi, regs[]; stack_user: size, bytes[size], dyn_size.
                uint64_t at = tail + sizeof h, ip, abi, regs[SW_PERF_NREGS], stack_size, dyn;
                ring_copy(data, size, at, &ip, 8);
                ring_copy(data, size, at + 8, &abi, 8);
                uint64_t after_regs = at + 16;
                if (abi != PERF_SAMPLE_REGS_ABI_NONE) {
                    ring_copy(data, size, after_regs, regs, sizeof regs);
                    after_regs += sizeof regs;
                }
                ring_copy(data, size, after_regs, &stack_size, 8);
                if (abi == PERF_SAMPLE_REGS_ABI_NONE || stack_size == 0) {
                    tail += h.size; // no user state in this one: wait for the next
                    continue;
                }
                ring_copy(data, size, after_regs + 8 + stack_size, &dyn, 8);
                if (dyn > stack_size) dyn = stack_size;
                uint8_t *copy = malloc(SW_PERF_STACK_BYTES);
                if (copy == NULL) {
                    rc = -ENOMEM;
                    break;
                }
                ring_copy(data, size, after_regs + 8, copy, dyn);
                uint64_t sp = regs[SW_PERF_SP];
                sw_walk_regs_t wr = {.pc = regs[SW_PERF_PC], .sp = sp, .fp = regs[SW_PERF_FP], .fp_known = 1};
#if defined(__aarch64__)
                wr.lr = sw_arch_code_address(regs[SW_PERF_LR]);
                wr.lr_known = 1;
#endif
                sw_walk_mem_t mem = {.lo = sp, .hi = sp + (dyn & ~7ULL), .copy = copy, .base = sp, .guard_tables = 1,
                                     .deadline_ns = deadline};
                sw_walk_result_t res = {0};
                out->count = 0;
                out->sp = sp;
                sw_walk(&wr, &mem, 0, out->frames, &out->count, max_frames, &res);
                sw_stack_take_async(out, &res);
                if (res.stop == SW_STOP_NO_ROW_AT_PC) {
                    walk_past_rowless_pc(out, &mem, copy, sp, wr.fp, wr.lr, max_frames, &res);
                } else {
                    out->stop_reason = res.stop == SW_STOP_NEED_FP ? SW_STOP_BAD_LINK : res.stop;
                }
                free(copy);
                out->table_frames = (uint8_t)(res.table_frames > 255 ? 255 : res.table_frames);
                out->truncated = out->stop_reason != SW_STOP_ROOT;
                out->stack_known = 1;
                out->taken_at_ns = (uint64_t)sw_now_ns();
                rc = 0;
                break;
            }
            tail += h.size;
        }
        __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
        if (rc != SW_ERR_TIMED_OUT) break;
        int64_t left = deadline - sw_now_ns();
        if (left <= 0) break;
        // A sleeping thread gains no CPU time and gives no sample: the deadline ends the wait.
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ms = (int)(left / 1000000) + 1;
        poll(&p, 1, ms > 5 ? 5 : ms);
    }
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    munmap(map, len);
    close(fd);
    out->latency_ns = (uint64_t)(sw_now_ns() - start);
    return rc;
}

#endif // SW_PLATFORM_SAMPLES
