// Request slots and the request/answer protocol, both sides: the requester claims, arms and
// waits; the handler on the target thread claims, captures, answers and (for snapshots) parks.
//
// A request lives in a static slot whose 32-bit state word carries (generation << 8 | state).
// The signal's si_value carries (magic, generation, slot index). The handler claims the slot with
// one compare-and-swap from ARMED to CAPTURING for *its* generation; a late handler whose request
// was abandoned or reused loses that CAS and touches nothing else. Slots are never freed.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_requests.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include "sw_futex.h"

static sw_slot_t g_slots[SW_SLOTS];
static sw_slot_payload_t g_payloads[SW_SLOTS];
static _Atomic uint32_t g_gen;
static _Atomic uint32_t g_next_slot;
static _Atomic int32_t g_armed;                  // slots in ARMED state, for the coalescing scan
static _Atomic uint32_t g_release;               // parked handlers wait while it equals their token
static uint32_t g_token;
static _Atomic uint64_t g_stat_handled, g_stat_late, g_stat_timeouts, g_stat_park_timeouts, g_stat_sent;

sw_slot_t *sw_slot(int idx) { return &g_slots[idx]; }
int sw_slot_index(const sw_slot_t *s) { return (int)(s - g_slots); }
// async-signal-safe
sw_slot_payload_t *sw_slot_payload(sw_slot_t *s) { return &g_payloads[s - g_slots]; }

// fork: requests in flight belonged to the parent's threads; none will ever be answered here.
static void slots_after_fork_in_child(void) {
    for (uint32_t i = 0; i < SW_SLOTS; i++) {
        atomic_store(&g_slots[i].state, WORD(GEN_OF(atomic_load(&g_slots[i].state)), ST_FREE));
        atomic_store(&g_slots[i].abandoned, 0);
    }
    atomic_store(&g_armed, 0);
}

__attribute__((constructor)) static void register_slots_fork_handler(void) {
    pthread_atfork(NULL, NULL, slots_after_fork_in_child);
}

// ---- the handler's side ----------------------------------------------------------------------

// async-signal-safe: reads the interrupted context, walks or copies the stack within the mapping
// that holds its stack pointer, and posts the answer. No locks, no allocation, no libc beyond
// memcpy, clock_gettime and syscall.
static void serve(sw_slot_t *s, uint32_t gen, const ucontext_t *uc);

// Claims slot `s` for generation `gen`. Returns 1 when this handler now owns the request.
static int claim_armed(sw_slot_t *s, uint32_t gen) {
    uint32_t expect = WORD(gen, ST_ARMED);
    if (!atomic_compare_exchange_strong_explicit(&s->state, &expect, WORD(gen, ST_CAPTURING),
                                                 memory_order_acq_rel, memory_order_relaxed)) {
        return 0;
    }
    atomic_fetch_sub_explicit(&g_armed, 1, memory_order_relaxed);
    return 1;
}

// Standard signals coalesce: a second request sent while the first signal is still pending is
// dropped by the kernel. So a handler also serves every other request armed for its thread,
// non-parking ones first (parking blocks). The scan runs only when another request is armed.
// async-signal-safe.
static void serve_coalesced(int32_t tid, const ucontext_t *uc) {
    if (atomic_load_explicit(&g_armed, memory_order_acquire) <= 0) return;
    if (tid == 0) tid = (int32_t)syscall(SYS_gettid);
    sw_slot_t *park_slot = NULL;
    uint32_t park_gen = 0;
    for (int i = 0; i < SW_SLOTS; i++) {
        sw_slot_t *s = &g_slots[i];
        uint32_t w = atomic_load_explicit(&s->state, memory_order_acquire);
        if (ST_OF(w) != ST_ARMED || atomic_load_explicit(&s->tid, memory_order_relaxed) != tid) continue;
        if (!claim_armed(s, GEN_OF(w))) continue;
        if (s->park && park_slot == NULL) {
            park_slot = s;
            park_gen = GEN_OF(w);
            continue;
        }
        serve(s, GEN_OF(w), uc);
    }
    if (park_slot != NULL) serve(park_slot, park_gen, uc);
}

// async-signal-safe: called by the signal handler for a request cookie.
void sw_capture_answer(uint64_t cookie, const void *ucv) {
    const ucontext_t *uc = (const ucontext_t *)ucv;
    uint32_t idx = (uint32_t)(cookie & 0xffffu);
    uint32_t gen = (uint32_t)((cookie >> 16) & 0xffffffu);
    sw_slot_t *s = idx < SW_SLOTS ? &g_slots[idx] : NULL;
    if (s == NULL || !claim_armed(s, gen)) {
        atomic_fetch_add_explicit(&g_stat_late, 1, memory_order_relaxed);
        serve_coalesced(0, uc);
        return;
    }
    int32_t tid = atomic_load_explicit(&s->tid, memory_order_relaxed);
    if (s->park) {
        serve_coalesced(tid, uc); // the others first: this one parks
        serve(s, gen, uc);
    } else {
        serve(s, gen, uc);
        serve_coalesced(tid, uc);
    }
}

// async-signal-safe: captures into a claimed slot, posts the answer, and parks if asked.
static void serve(sw_slot_t *s, uint32_t gen, const ucontext_t *uc) {
    int64_t t0 = sw_now_ns();
    sw_stack_t *st = &sw_slot_payload(s)->stack;
    st->taken_at_ns = (uint64_t)t0;
    sw_capture_fill(st, uc, (sw_unwinder_t)s->unwinder, s->max_frames, &s->bounds);
    if (s->unwinder == SW_UNWIND_LIBUNWIND) {
        sw_arch_unw_regs(uc, sw_slot_payload(s)->regs.r);
        uint64_t sp = st->sp, lo = s->bounds.lo, end = s->bounds.readable;
        s->copy_len = 0;
        s->copy_base = sp;
        // Where sw_capture_fill found the reads must stop for this SP: no second system call.
        if (s->copy != NULL && !s->park && st->stack_known && sp >= lo && sp < end) {
            // Include the red zone below SP (x86_64): the interrupted leaf may keep data there.
            uint64_t from = sp - SW_ARCH_RED_ZONE >= lo ? sp - SW_ARCH_RED_ZONE : lo;
            uint64_t to = end - from > SW_COPY_BYTES ? from + SW_COPY_BYTES : end;
            from &= ~7ULL;
            sw_copy_raw_words(s->copy, from, (to - from) & ~7ULL);
            s->copy_base = from;
            s->copy_len = (to - from) & ~7ULL;
        }
    }
    st->handler_ns = (uint64_t)(sw_now_ns() - t0);
    atomic_fetch_add_explicit(&g_stat_handled, 1, memory_order_relaxed);
    if (!s->park) {
        atomic_store_explicit(&s->state, WORD(gen, ST_DONE), memory_order_release);
        sw_futex_wake_all(&s->state);
        return;
    }
    // Park until released or until our own deadline, so a requester that dies or stalls never
    // leaves this thread stuck. After PARKED the slot belongs to the requester: only a CAS for
    // our own generation may touch it again.
    uint32_t token = s->park_token;
    int64_t deadline = s->park_deadline_ns;
    atomic_store_explicit(&s->state, WORD(gen, ST_PARKED), memory_order_release);
    sw_futex_wake_all(&s->state);
    while (atomic_load_explicit(&g_release, memory_order_acquire) == token) {
        int64_t now = sw_now_ns();
        if (now >= deadline) break;
        sw_futex_wait_ns(&g_release, token, deadline - now);
    }
    if (atomic_load_explicit(&g_release, memory_order_acquire) == token) {
        uint32_t e = WORD(gen, ST_PARKED);
        if (atomic_compare_exchange_strong_explicit(&s->state, &e, WORD(gen, ST_LEFT),
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            atomic_fetch_add_explicit(&g_stat_park_timeouts, 1, memory_order_relaxed);
            sw_futex_wake_all(&s->state);
        }
    }
}

void sw_sampler_stats(sw_sampler_stats_t *out) {
    out->handled = atomic_load(&g_stat_handled);
    out->late = atomic_load(&g_stat_late);
    out->chained = sw_signal_chained_count();
    out->timeouts = atomic_load(&g_stat_timeouts);
    out->park_timeouts = atomic_load(&g_stat_park_timeouts);
    out->cut_at_unmapped = sw_stack_fill_cut_count();
    out->unverified = sw_mapped_unverified_count();
    out->kernel_bound_checks = sw_stack_bounds_checks();
    out->sent = atomic_load(&g_stat_sent);
}

// ---- the requester's side ------------------------------------------------------------------

static uint32_t next_gen(void) {
    uint32_t g;
    do {
        g = (atomic_fetch_add(&g_gen, 1) + 1) & 0xffffffu;
    } while (g == 0);
    return g;
}

// Claims a free slot (or one whose abandoned capture has since finished). Returns its index or -1.
int sw_slot_claim(uint32_t *gen_out) {
    uint32_t start = atomic_fetch_add(&g_next_slot, 1);
    for (uint32_t k = 0; k < SW_SLOTS; k++) {
        uint32_t i = (start + k) % SW_SLOTS;
        sw_slot_t *s = &g_slots[i];
        uint32_t w = atomic_load_explicit(&s->state, memory_order_acquire);
        int reusable = ST_OF(w) == ST_FREE ||
                       (ST_OF(w) == ST_DONE && atomic_load_explicit(&s->abandoned, memory_order_acquire));
        if (!reusable) continue;
        uint32_t gen = next_gen();
        if (atomic_compare_exchange_strong(&s->state, &w, WORD(gen, ST_RESERVED))) {
            atomic_store(&s->abandoned, 0);
            *gen_out = gen;
            return (int)i;
        }
    }
    return -1;
}

void sw_slot_arm(sw_slot_t *s, uint32_t gen) {
    atomic_fetch_add_explicit(&g_armed, 1, memory_order_relaxed);
    atomic_store_explicit(&s->state, WORD(gen, ST_ARMED), memory_order_release);
}

// Takes back a request no handler has claimed. Returns 1 when it did.
int sw_slot_disarm(sw_slot_t *s, uint32_t gen) {
    uint32_t e = WORD(gen, ST_ARMED);
    if (!atomic_compare_exchange_strong(&s->state, &e, WORD(gen, ST_FREE))) return 0;
    atomic_fetch_sub_explicit(&g_armed, 1, memory_order_relaxed);
    return 1;
}

void sw_slot_free(sw_slot_t *s, uint32_t gen) {
    atomic_store_explicit(&s->state, WORD(gen, ST_FREE), memory_order_release);
}

// Gives up on a request at its deadline. Returns 1 when the slot was freed now.
int sw_slot_abandon(sw_slot_t *s, uint32_t gen) {
    atomic_fetch_add(&g_stat_timeouts, 1);
    if (sw_slot_disarm(s, gen)) return 1;
    // The handler is writing right now: let it finish into the slot, reclaim the slot later.
    atomic_store(&s->abandoned, 1);
    return 0;
}

int sw_slot_send(int32_t tid, int signo, uint32_t idx, uint32_t gen) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_signo = signo;
    info.si_code = SI_QUEUE;
    info.si_pid = sw_signal_owner_pid();
    info.si_uid = getuid();
    uint64_t cookie = (SW_COOKIE_MAGIC << 48) | ((uint64_t)gen << 16) | idx;
    info.si_value.sival_ptr = (void *)(uintptr_t)cookie;
    if (syscall(SYS_rt_tgsigqueueinfo, sw_signal_owner_pid(), tid, signo, &info) != 0) {
        return errno == ESRCH ? SW_ERR_THREAD_GONE : -errno;
    }
    atomic_fetch_add_explicit(&g_stat_sent, 1, memory_order_relaxed);
    return 0;
}

int sw_slot_wait(sw_slot_t *s, uint32_t gen, int64_t deadline, uint32_t *final_state) {
    for (;;) {
        uint32_t w = atomic_load_explicit(&s->state, memory_order_acquire);
        uint32_t st = ST_OF(w);
        if (GEN_OF(w) == gen && (st == ST_DONE || st == ST_PARKED || st == ST_LEFT)) {
            *final_state = st;
            return 0;
        }
        int64_t now = sw_now_ns();
        if (now >= deadline) return SW_ERR_TIMED_OUT;
        sw_futex_wait_ns(&s->state, w, deadline - now);
    }
}

int sw_slot_ensure_copy(sw_slot_t *s) {
    if (s->copy != NULL) return 0;
    void *p = mmap(NULL, SW_COPY_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -errno;
    s->copy = p;
    return 0;
}

uint32_t sw_slots_new_park_token(void) {
    g_token += 2;
    atomic_store_explicit(&g_release, g_token, memory_order_release);
    return g_token;
}

void sw_slots_release(uint32_t token) {
    atomic_store_explicit(&g_release, token + 1, memory_order_release);
    sw_futex_wake_all(&g_release);
}

#endif // SW_PLATFORM_SAMPLES
