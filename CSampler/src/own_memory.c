// Reading this process's own memory without trusting a snapshot of its map: the kernel is asked,
// so a mapping that went away after /proc/self/maps was read costs a short read, never a SIGSEGV
// inside the service Stallwatch is linked into.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

// mincore's answer vector has one byte a page: a chunk this size keeps it small enough for the
// stack of a signal handler running on a thread we know nothing about.
#define SW_CHUNK_PAGES 512u

// mincore wants a start aligned to the kernel's page, which arm64 kernels may make 16 or 64 KiB
// (sw_arch.h: SW_ARCH_FIXED_PAGE_SIZE is 0 there). Read once before any handler can run (sysconf is not async-signal-safe); 4 KiB until then.
static uint64_t g_page_size = 4096;

__attribute__((constructor)) static void read_page_size(void) {
    long p = sysconf(_SC_PAGESIZE);
    if (p > 0 && (p & (p - 1)) == 0) g_page_size = (uint64_t)p;
}

static _Atomic uint64_t g_unverified;

// async-signal-safe (a system call). 1 mapped, 0 not (a hole), -1 the kernel would not say.
static int range_mapped(uint64_t from, uint64_t to) {
    unsigned char vec[SW_CHUNK_PAGES];
    long rc = syscall(SYS_mincore, (void *)(uintptr_t)from, (size_t)(to - from), vec);
    if (rc == 0) return 1;
    return errno == ENOMEM ? 0 : -1;
}

// async-signal-safe: mincore fails with ENOMEM when any page of the range is unmapped; bisect only
// on that (rare) path to find where the mapped prefix ends.
uint64_t sw_mapped_end(uint64_t from, uint64_t to) {
    if (to <= from) return from;
    int saved = errno;
    const uint64_t page = SW_ARCH_FIXED_PAGE_SIZE != 0 ? SW_ARCH_FIXED_PAGE_SIZE : g_page_size;
    uint64_t at = from & ~(page - 1);
    uint64_t end = to;
    while (at < to) {
        uint64_t chunk_end = at + page * SW_CHUNK_PAGES;
        if (chunk_end > to || chunk_end < at) chunk_end = to;
        int m = range_mapped(at, chunk_end);
        if (m < 0) {
            atomic_fetch_add_explicit(&g_unverified, 1, memory_order_relaxed);
            break; // seccomp or an old kernel: the map table's bound is all there is
        }
        if (m == 0) {
            // The first unmapped page lies in [at, chunk_end): every probe halves the pages left.
            uint64_t good = at, bad = chunk_end;
            while (bad - good > page) {
                uint64_t mid = good + (((bad - good) / page) / 2) * page;
                if (range_mapped(good, mid) == 1) good = mid;
                else bad = mid;
            }
            end = good > from ? good : from;
            break;
        }
        at = chunk_end;
    }
    errno = saved;
    return end;
}

uint64_t sw_mapped_unverified_count(void) {
    return atomic_load_explicit(&g_unverified, memory_order_relaxed);
}

// async-signal-safe (a system call).
// This process's id, for process_vm_readv: glibc no longer caches getpid(), and a guarded walk
// reads a few words at a time (a system call each), so asking it every time doubled their count.
// Set at load and again in a forked child.
static _Atomic pid_t g_self_pid;

static void note_self_pid(void) { atomic_store_explicit(&g_self_pid, getpid(), memory_order_relaxed); }

__attribute__((constructor)) static void init_self_pid(void) {
    note_self_pid();
    pthread_atfork(NULL, NULL, note_self_pid);
}

size_t sw_read_own(void *dst, uint64_t src, size_t len) {
    struct iovec local = {.iov_base = dst, .iov_len = len};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)src, .iov_len = len};
    int saved = errno;
    pid_t self = atomic_load_explicit(&g_self_pid, memory_order_relaxed);
    if (self <= 0) self = getpid();
    long r = syscall(SYS_process_vm_readv, (long)self, &local, 1UL, &remote, 1UL, 0UL);
    errno = saved;
    return r < 0 ? 0 : (size_t)r;
}

#endif // SW_PLATFORM_SAMPLES
