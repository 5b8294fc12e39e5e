// The enqueue stamps: one slot per job address hash, newest job wins. Written on every global
// enqueue while a watchdog wants them, so the write is a coarse clock read (the vDSO copies a word
// the kernel updates each tick: no system call, no TSC read) and two relaxed stores; read by the
// watchdog only. Never on a signal handler's path.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_job_stamps.h"

#include <stdatomic.h>
#include <time.h>
#include "sw_internal.h"

// 4096 slots × 16 bytes = 64 KiB: a pool of 64 workers with 60 jobs queued each still finds every
// running job's stamp unless two of them hash alike (then the newer one's is kept, the older one
// reads 0 and is dated by the scans instead).
#define SLOT_BITS 12
#define SLOTS (1u << SLOT_BITS)

typedef struct stamp_slot {
    _Atomic uint64_t job;
    _Atomic uint64_t at;
} stamp_slot_t;

static stamp_slot_t g_slots[SLOTS];
static _Atomic int g_enabled;

// Jobs are 16-byte aligned heap objects: the low bits say nothing; a multiplicative hash spreads
// the rest.
static inline uint32_t slot_of(uint64_t job) {
    return (uint32_t)((job * 0x9E3779B97F4A7C15ull) >> (64 - SLOT_BITS));
}

void sw_job_stamp_note(const void *job) {
    if (!atomic_load_explicit(&g_enabled, memory_order_relaxed) || job == NULL) return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
    uint64_t at = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    uint64_t key = (uint64_t)(uintptr_t)job;
    stamp_slot_t *slot = &g_slots[slot_of(key)];
    // The instant first, the key last (release): a reader that sees the key sees an instant stored
    // for it or for a later enqueue of a job in the same slot, which the key re-check catches.
    atomic_store_explicit(&slot->job, 0, memory_order_relaxed);
    atomic_store_explicit(&slot->at, at, memory_order_release);
    atomic_store_explicit(&slot->job, key, memory_order_release);
}

void sw_job_stamps_enable(int on) {
    atomic_fetch_add_explicit(&g_enabled, on ? 1 : -1, memory_order_relaxed);
}

int sw_job_stamps_enabled(void) { return atomic_load_explicit(&g_enabled, memory_order_relaxed); }

uint64_t sw_job_stamp_of(uint64_t job) {
    if (job == 0) return 0;
    stamp_slot_t *slot = &g_slots[slot_of(job)];
    if (atomic_load_explicit(&slot->job, memory_order_acquire) != job) return 0;
    uint64_t at = atomic_load_explicit(&slot->at, memory_order_acquire);
    atomic_thread_fence(memory_order_acquire);
    // Rewritten meanwhile (another job, or this one queued again): the instant may be either's.
    if (atomic_load_explicit(&slot->job, memory_order_relaxed) != job) return 0;
    return at;
}

#endif // SW_PLATFORM_SAMPLES
