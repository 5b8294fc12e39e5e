// Request/answer stack capture by signal, and held-still snapshots.
//
// A request lives in a static slot whose 32-bit state word carries (generation << 8 | state).
// The signal's si_value carries (magic, generation, slot index). The handler claims the slot with
// one compare-and-swap from ARMED to CAPTURING for *its* generation; a late handler whose request
// was abandoned or reused loses that CAS and touches nothing else. Slots are never freed.
#include "sw_internal.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define SW_SLOTS 512
#define SW_COPY_BYTES (64 * 1024)

#define SW_TID_CACHE 256

enum { ST_FREE = 0, ST_RESERVED, ST_ARMED, ST_CAPTURING, ST_DONE, ST_PARKED, ST_LEFT };
#define WORD(gen, st) ((uint32_t)(((gen) << 8) | (uint32_t)(st)))
#define GEN_OF(w) ((w) >> 8)
#define ST_OF(w) ((w) & 0xffu)

typedef struct sw_slot {
    _Atomic uint32_t state;
    _Atomic int32_t tid;            // the target, so a handler can serve requests whose signal coalesced
    _Atomic uint32_t abandoned;     // the requester gave up while the handler was capturing
    // The request: written while RESERVED, read by the handler after it wins ARMED -> CAPTURING.
    uint32_t max_frames;
    uint8_t unwinder;
    uint8_t park;
    uint32_t park_token;
    int64_t park_deadline_ns;
    uint8_t *copy;                  // SW_COPY_BYTES, mapped by the requester on first use
    uint64_t copy_base, copy_len;
} sw_slot_t;

// The answer's bulk lives apart from the slots: requesters scan every slot's state to find a free
// one, and with the 2 KiB stacks inline that scan would make all 512 slots resident (1.1 MiB).
typedef struct sw_slot_payload {
    sw_stack_t stack;
    sw_regs_t regs;
} sw_slot_payload_t;

static sw_slot_t g_slots[SW_SLOTS];
static sw_slot_payload_t g_payloads[SW_SLOTS];
#define PAYLOAD(s) (&g_payloads[(s) - g_slots])
static _Atomic uint32_t g_gen;
static _Atomic uint32_t g_next_slot;
static _Atomic int32_t g_ok_tids[SW_TID_CACHE]; // threads seen not to block the signal

// Snapshot state: one snapshot at a time.
static _Atomic int g_snapshot_active;
static _Atomic uint32_t g_release;               // handlers park while it equals their token
static uint32_t g_token;
static uint16_t g_held_idx[SW_SLOTS];
static uint32_t g_held_gen[SW_SLOTS];
static size_t g_held_count;

static _Atomic int32_t g_armed;                  // slots in ARMED state, for the coalescing scan
static _Atomic uint64_t g_stat_handled, g_stat_late, g_stat_timeouts, g_stat_park_timeouts;

// ---- futex ---------------------------------------------------------------------------------

// async-signal-safe (a system call)
static void futex_wake_all(_Atomic uint32_t *word) {
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

// async-signal-safe (a system call); bounded by `ns`.
static void futex_wait_ns(_Atomic uint32_t *word, uint32_t expected, int64_t ns) {
    if (ns <= 0) return;
    struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
}

// ---- the handler ---------------------------------------------------------------------------

// async-signal-safe: reads only the context and the stack inside the mapping that holds its SP.
void sw_capture_fill(sw_stack_t *st, const void *ucv, sw_unwinder_t unwinder, uint32_t max_frames,
                     uint64_t *cached_lo, uint64_t *cached_hi) {
    const ucontext_t *uc = ucv;
    const greg_t *g = uc->uc_mcontext.gregs;
    uint64_t pc = (uint64_t)g[REG_RIP], sp = (uint64_t)g[REG_RSP];
    st->frames[0] = pc;
    st->count = 1;
    st->sp = sp;
    st->truncated = 0;
    st->unwinder = (uint8_t)unwinder;
    st->leaf_word_count = 0;
    if (unwinder == SW_UNWIND_NONE) {
        st->stack_known = 1; // nothing to bound: the floor takes the PC only
        return;
    }
    uint64_t lo = 0, hi = 0;
    if (cached_lo != NULL && cached_hi != NULL && sp >= *cached_lo && sp < *cached_hi) {
        // A live thread's own stack mapping does not move: skip the table lookup (cold cache
        // lines in the table were most of this handler's time).
        lo = *cached_lo;
        hi = *cached_hi;
        st->stack_known = 1;
    } else {
        st->stack_known = (uint8_t)sw_maps_find(sp, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi);
        if (st->stack_known && cached_lo != NULL && cached_hi != NULL) {
            *cached_lo = lo;
            *cached_hi = hi;
        }
    }
    if (unwinder != SW_UNWIND_FRAME_POINTER) return;
    if (st->stack_known) {
        st->truncated = (uint8_t)sw_fp_walk_context(pc, sp, (uint64_t)g[REG_RBP], hi, st->frames, &st->count,
                                                    max_frames, st->leaf_words, &st->leaf_word_count);
    } else {
        st->truncated = 1;
    }
}

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
    sw_stack_t *st = &PAYLOAD(s)->stack;
    st->taken_at_ns = (uint64_t)t0;
    sw_capture_fill(st, uc, (sw_unwinder_t)s->unwinder, s->max_frames, NULL, NULL);
    if (s->unwinder == SW_UNWIND_LIBUNWIND) {
        const greg_t *g = uc->uc_mcontext.gregs;
        static const int map[17] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
                                    REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
                                    REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};
        for (int i = 0; i < 17; i++) PAYLOAD(s)->regs.r[i] = (uint64_t)g[map[i]];
        uint64_t sp = st->sp, lo = 0, hi = 0;
        s->copy_len = 0;
        s->copy_base = sp;
        if (s->copy != NULL && !s->park && sw_maps_find(sp, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi)) {
            // Include the red zone below SP: the interrupted leaf may keep data there.
            uint64_t from = sp - 128 >= lo ? sp - 128 : lo;
            uint64_t to = hi - from > SW_COPY_BYTES ? from + SW_COPY_BYTES : hi;
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
        futex_wake_all(&s->state);
        return;
    }
    // Park until released or until our own deadline, so a requester that dies or stalls never
    // leaves this thread stuck. After PARKED the slot belongs to the requester: only a CAS for
    // our own generation may touch it again.
    uint32_t token = s->park_token;
    int64_t deadline = s->park_deadline_ns;
    atomic_store_explicit(&s->state, WORD(gen, ST_PARKED), memory_order_release);
    futex_wake_all(&s->state);
    while (atomic_load_explicit(&g_release, memory_order_acquire) == token) {
        int64_t now = sw_now_ns();
        if (now >= deadline) break;
        futex_wait_ns(&g_release, token, deadline - now);
    }
    if (atomic_load_explicit(&g_release, memory_order_acquire) == token) {
        uint32_t e = WORD(gen, ST_PARKED);
        if (atomic_compare_exchange_strong_explicit(&s->state, &e, WORD(gen, ST_LEFT),
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            atomic_fetch_add_explicit(&g_stat_park_timeouts, 1, memory_order_relaxed);
            futex_wake_all(&s->state);
        }
    }
}

void sw_capture_reset_after_fork(void) {
    // Requests in flight belonged to the parent's threads: none of them will ever be answered here.
    for (uint32_t i = 0; i < SW_SLOTS; i++) {
        atomic_store(&g_slots[i].state, WORD(GEN_OF(atomic_load(&g_slots[i].state)), ST_FREE));
        atomic_store(&g_slots[i].abandoned, 0);
    }
    atomic_store(&g_armed, 0);
    atomic_store(&g_snapshot_active, 0);
    for (uint32_t i = 0; i < SW_TID_CACHE; i++) atomic_store(&g_ok_tids[i], 0);
}

void sw_sampler_stats(sw_sampler_stats_t *out) {
    out->handled = atomic_load(&g_stat_handled);
    out->late = atomic_load(&g_stat_late);
    out->chained = sw_signal_chained_count();
    out->timeouts = atomic_load(&g_stat_timeouts);
    out->park_timeouts = atomic_load(&g_stat_park_timeouts);
}

// ---- requests ------------------------------------------------------------------------------

static uint32_t next_gen(void) {
    uint32_t g;
    do {
        g = (atomic_fetch_add(&g_gen, 1) + 1) & 0xffffffu;
    } while (g == 0);
    return g;
}

// Claims a free slot (or one whose abandoned capture has since finished). Returns its index or -1.
static int claim_slot(uint32_t *gen_out) {
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

static void arm_slot(sw_slot_t *s, uint32_t gen) {
    atomic_fetch_add_explicit(&g_armed, 1, memory_order_relaxed);
    atomic_store_explicit(&s->state, WORD(gen, ST_ARMED), memory_order_release);
}

// Takes back a request no handler has claimed. Returns 1 when it did.
static int disarm_slot(sw_slot_t *s, uint32_t gen) {
    uint32_t e = WORD(gen, ST_ARMED);
    if (!atomic_compare_exchange_strong(&s->state, &e, WORD(gen, ST_FREE))) return 0;
    atomic_fetch_sub_explicit(&g_armed, 1, memory_order_relaxed);
    return 1;
}

static void free_slot(sw_slot_t *s, uint32_t gen) {
    atomic_store_explicit(&s->state, WORD(gen, ST_FREE), memory_order_release);
}

// Gives up on a request at its deadline. Returns 1 when the slot was freed now.
static int abandon_slot(sw_slot_t *s, uint32_t gen) {
    atomic_fetch_add(&g_stat_timeouts, 1);
    if (disarm_slot(s, gen)) return 1;
    // The handler is writing right now: let it finish into the slot, reclaim the slot later.
    atomic_store(&s->abandoned, 1);
    return 0;
}

static int send_request(int32_t tid, int signo, uint32_t idx, uint32_t gen) {
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
    return 0;
}

static int wait_state(sw_slot_t *s, uint32_t gen, int64_t deadline, uint32_t *final_state) {
    for (;;) {
        uint32_t w = atomic_load_explicit(&s->state, memory_order_acquire);
        uint32_t st = ST_OF(w);
        if (GEN_OF(w) == gen && (st == ST_DONE || st == ST_PARKED || st == ST_LEFT)) {
            *final_state = st;
            return 0;
        }
        int64_t now = sw_now_ns();
        if (now >= deadline) return SW_ERR_TIMED_OUT;
        futex_wait_ns(&s->state, w, deadline - now);
    }
}

// Whether `tid` blocks `signo`: 1 yes, 0 no, SW_ERR_THREAD_GONE. A thread inside our own handler
// shows the signal blocked for the handler's duration (the kernel masks it while it runs), so
// "blocked" counts only when it stays so over three readings 200 µs apart.
int sw_signal_blocked_by(int32_t tid, int signo) {
    for (int attempt = 0; attempt < 3; attempt++) {
        uint64_t mask = 0;
        int rc = sw_thread_sigblk(tid, &mask);
        if (rc == -ESRCH) return SW_ERR_THREAD_GONE;
        if (rc != 0 || (mask & (1ULL << (signo - 1))) == 0) return 0;
        if (attempt < 2) {
            struct timespec pause = {.tv_sec = 0, .tv_nsec = 200000};
            nanosleep(&pause, NULL);
        }
    }
    return 1;
}

// Decides why a thread did not answer: gone, blocking the signal, or just late.
// Past the deadline already: one SigBlk reading, no retries with pauses.
static int classify_silence(int32_t tid, int signo) {
    uint64_t mask = 0;
    int rc = sw_thread_sigblk(tid, &mask);
    if (rc == -ESRCH) return SW_ERR_THREAD_GONE;
    return rc == 0 && (mask & (1ULL << (signo - 1))) ? SW_ERR_SIGNAL_BLOCKED : SW_ERR_TIMED_OUT;
}

// Before the first request to a thread: does it block the signal (libdispatch threads block
// nearly all), and is its stack in the map table (a new thread's stack may be newer than it)?
static int check_new_target(int32_t tid, int signo, int64_t deadline_ns) {
    uint32_t h = (uint32_t)tid % SW_TID_CACHE;
    if (atomic_load_explicit(&g_ok_tids[h], memory_order_relaxed) == tid) return 0;
    int blocked = sw_signal_blocked_by(tid, signo);
    if (blocked < 0) return blocked;
    if (blocked) return SW_ERR_SIGNAL_BLOCKED;
    if (sw_maps_rebuild_until(deadline_ns) == SW_ERR_TIMED_OUT) return SW_ERR_TIMED_OUT;
    atomic_store_explicit(&g_ok_tids[h], tid, memory_order_relaxed);
    return 0;
}

static void forget_target(int32_t tid) {
    uint32_t h = (uint32_t)tid % SW_TID_CACHE;
    int32_t expected = tid;
    atomic_compare_exchange_strong(&g_ok_tids[h], &expected, 0);
}

static int ensure_copy_buffer(sw_slot_t *s) {
    if (s->copy != NULL) return 0;
    void *p = mmap(NULL, SW_COPY_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -errno;
    s->copy = p;
    return 0;
}

static int validate(int32_t tid, sw_unwinder_t unwinder, uint32_t max_frames, int64_t timeout_ns) {
    if (sw_sampler_signal() == 0) return SW_ERR_NOT_INSTALLED;
    if (tid <= 0 || max_frames == 0 || timeout_ns <= 0) return SW_ERR_INVALID;
    if (unwinder != SW_UNWIND_FRAME_POINTER && unwinder != SW_UNWIND_LIBUNWIND && unwinder != SW_UNWIND_NONE) {
        return SW_ERR_INVALID;
    }
    if (tid == sw_gettid()) return SW_ERR_SELF;
    return 0;
}

// Copies the answer out of the slot and, for libunwind, unwinds it here (outside the handler).
static void collect(sw_slot_t *s, int32_t tid, uint32_t max_frames, int live, int64_t deadline_ns, sw_stack_t *out) {
    const sw_stack_t *st = &PAYLOAD(s)->stack;
    out->count = st->count;
    out->unwinder = st->unwinder;
    out->truncated = st->truncated;
    out->stack_known = st->stack_known;
    out->tid = tid;
    out->sp = st->sp;
    out->handler_ns = st->handler_ns;
    out->taken_at_ns = st->taken_at_ns;
    memcpy(out->frames, st->frames, sizeof(uint64_t) * st->count);
    memcpy(out->leaf_words, st->leaf_words, sizeof st->leaf_words);
    out->leaf_word_count = st->leaf_word_count;
    out->leaf_caller_recovered = 0;
    if (st->unwinder == SW_UNWIND_FRAME_POINTER) sw_recover_leaf_caller(out);
    if (st->unwinder == SW_UNWIND_LIBUNWIND) {
        sw_stack_view_t view;
        memset(&view, 0, sizeof view);
        view.regs = &PAYLOAD(s)->regs;
        if (live) {
            uint64_t lo = 0, hi = 0;
            if (sw_maps_find(st->sp, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi)) {
                view.live_lo = st->sp - 128 >= lo ? st->sp - 128 : lo;
                view.live_hi = hi;
            }
        } else {
            view.copy = s->copy;
            view.base = s->copy_base;
            view.len = s->copy_len;
        }
        sw_remote_unwind(&view, out, max_frames, deadline_ns);
        out->unwinder = SW_UNWIND_LIBUNWIND;
    }
}

int sw_capture(int32_t tid, sw_unwinder_t unwinder, uint32_t max_frames, int64_t timeout_ns,
               sw_stack_t *out) {
    int rc = validate(tid, unwinder, max_frames, timeout_ns);
    if (rc != 0) return rc;
    if (max_frames > SW_MAX_FRAMES) max_frames = SW_MAX_FRAMES;
    int signo = sw_sampler_signal();
    int64_t t_start = sw_now_ns();
    int64_t deadline = t_start + timeout_ns;
    // The deadline covers everything: the new-thread check, the signal, the unwind, the retry.
    rc = check_new_target(tid, signo, deadline);
    if (rc != 0) return rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (sw_now_ns() >= deadline) return SW_ERR_TIMED_OUT;
        uint32_t gen;
        int idx = claim_slot(&gen);
        if (idx < 0) return SW_ERR_BUSY;
        sw_slot_t *s = &g_slots[idx];
        s->max_frames = max_frames;
        s->unwinder = (uint8_t)unwinder;
        s->park = 0;
        atomic_store_explicit(&s->tid, tid, memory_order_relaxed);
        if (unwinder == SW_UNWIND_LIBUNWIND && (rc = ensure_copy_buffer(s)) != 0) {
            free_slot(s, gen);
            return rc;
        }
        arm_slot(s, gen);
        int64_t t_sent = sw_now_ns();
        rc = send_request(tid, signo, (uint32_t)idx, gen);
        if (rc != 0) {
            disarm_slot(s, gen);
            if (rc == SW_ERR_THREAD_GONE) forget_target(tid);
            return rc;
        }
        uint32_t final_state = 0;
        rc = wait_state(s, gen, deadline, &final_state);
        if (rc != 0) {
            if (abandon_slot(s, gen) == 0) {
                // Give the running handler a moment: it is bounded and almost done.
                wait_state(s, gen, sw_now_ns() + 1000000, &final_state);
            }
            forget_target(tid);
            return classify_silence(tid, signo);
        }
        int64_t t_answer = sw_now_ns();
        if (!PAYLOAD(s)->stack.stack_known && attempt == 0) {
            // The stack is newer than our map table: refresh and ask once more.
            free_slot(s, gen);
            if (sw_maps_rebuild_until(deadline) == SW_ERR_TIMED_OUT) return SW_ERR_TIMED_OUT;
            continue;
        }
        collect(s, tid, max_frames, 0, deadline, out);
        out->latency_ns = (uint64_t)(t_answer - t_sent);
        free_slot(s, gen);
        return 0;
    }
    return SW_ERR_TIMED_OUT;
}

// ---- held-still snapshots ---------------------------------------------------------------------

int sw_snapshot_hold(const int32_t *tids, size_t n, sw_unwinder_t unwinder, uint32_t max_frames,
                     int64_t timeout_ns, int64_t park_ns, sw_stack_t *outs, int *results) {
    if (n == 0) return 0;
    if (n > SW_SLOTS / 2 || park_ns <= 0 || tids == NULL || outs == NULL || results == NULL) {
        return SW_ERR_INVALID;
    }
    int rc = validate(tids[0] == sw_gettid() ? 1 : tids[0], unwinder, max_frames, timeout_ns);
    if (rc != 0 && rc != SW_ERR_SELF) return rc;
    if (max_frames > SW_MAX_FRAMES) max_frames = SW_MAX_FRAMES;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&g_snapshot_active, &expected, 1)) return SW_ERR_BUSY;
    int signo = sw_sampler_signal();
    int32_t self = sw_gettid();
    // Thread ids are reused: a new thread behind a known id has a stack the table may not hold yet,
    // and a held thread gets no second chance. Snapshots are rare; read the map afresh.
    sw_maps_rebuild();
    g_token += 2;
    uint32_t token = g_token;
    atomic_store_explicit(&g_release, token, memory_order_release);
    int64_t now = sw_now_ns();
    int64_t deadline = now + timeout_ns;
    int64_t park_deadline = deadline + park_ns;
    int idxs[SW_SLOTS / 2];
    uint32_t gens[SW_SLOTS / 2];
    int64_t sent_at[SW_SLOTS / 2];
    for (size_t i = 0; i < n; i++) {
        idxs[i] = -1;
        int32_t tid = tids[i];
        if (tid <= 0) { results[i] = SW_ERR_INVALID; continue; }
        if (tid == self) { results[i] = SW_ERR_SELF; continue; }
        if ((results[i] = check_new_target(tid, signo, INT64_MAX)) != 0) continue;
        uint32_t gen;
        int idx = claim_slot(&gen);
        if (idx < 0) { results[i] = SW_ERR_BUSY; continue; }
        sw_slot_t *s = &g_slots[idx];
        s->max_frames = max_frames;
        s->unwinder = (uint8_t)unwinder;
        s->park = 1;
        atomic_store_explicit(&s->tid, tid, memory_order_relaxed);
        s->park_token = token;
        s->park_deadline_ns = park_deadline;
        arm_slot(s, gen);
        sent_at[i] = sw_now_ns();
        results[i] = send_request(tid, signo, (uint32_t)idx, gen);
        if (results[i] != 0) {
            disarm_slot(s, gen);
            continue;
        }
        idxs[i] = idx;
        gens[i] = gen;
    }
    g_held_count = 0;
    int held = 0;
    for (size_t i = 0; i < n; i++) {
        if (idxs[i] < 0) continue;
        sw_slot_t *s = &g_slots[idxs[i]];
        uint32_t final_state = 0;
        if (wait_state(s, gens[i], deadline, &final_state) != 0) {
            if (abandon_slot(s, gens[i]) == 0) {
                // It is in the handler and will park: keep it in the held set so release frees it.
                if (wait_state(s, gens[i], sw_now_ns() + 2000000, &final_state) != 0) {
                    results[i] = SW_ERR_TIMED_OUT;
                    continue;
                }
            } else {
                forget_target(tids[i]);
                results[i] = classify_silence(tids[i], signo);
                continue;
            }
        }
        if (final_state != ST_PARKED) {
            results[i] = SW_ERR_TIMED_OUT; // it answered but had already left its park
            free_slot(s, gens[i]);
            continue;
        }
        int64_t answered = sw_now_ns();
        g_held_idx[g_held_count] = (uint16_t)idxs[i];
        g_held_gen[g_held_count] = gens[i];
        g_held_count++;
        held++;
        outs[i].latency_ns = (uint64_t)(answered - sent_at[i]);
    }
    // Everyone who answered is parked now: unwind while they hold still. No symbolization here.
    for (size_t i = 0; i < n; i++) {
        if (idxs[i] < 0 || results[i] != 0) continue;
        uint64_t latency = outs[i].latency_ns;
        // Threads are parked until park_deadline: unwinding past it would read stacks that move.
        collect(&g_slots[idxs[i]], tids[i], max_frames, 1, park_deadline, &outs[i]);
        outs[i].latency_ns = latency;
    }
    return held;
}

int sw_snapshot_release(void) {
    if (!atomic_load(&g_snapshot_active)) return SW_ERR_INVALID;
    atomic_store_explicit(&g_release, g_token + 1, memory_order_release);
    futex_wake_all(&g_release);
    int consistent = 1;
    for (size_t k = 0; k < g_held_count; k++) {
        sw_slot_t *s = &g_slots[g_held_idx[k]];
        uint32_t gen = g_held_gen[k];
        uint32_t e = WORD(gen, ST_PARKED);
        if (!atomic_compare_exchange_strong(&s->state, &e, WORD(gen, ST_FREE))) {
            consistent = 0; // it left on its own deadline before we released it
            free_slot(s, gen);
        }
    }
    g_held_count = 0;
    atomic_store(&g_snapshot_active, 0);
    return consistent;
}
