// Held-still snapshots: every listed thread captures its stack and then parks in its handler
// until released (or until its own deadline), so the stacks are read as one consistent moment.
// One snapshot at a time.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_requests.h"

#include <pthread.h>
#include <stddef.h>

static _Atomic int g_snapshot_active;
static uint32_t g_token;                 // of the snapshot now held
static uint16_t g_held_idx[SW_SLOTS];
static uint32_t g_held_gen[SW_SLOTS];
static size_t g_held_count;

static void snapshot_after_fork_in_child(void) {
    atomic_store(&g_snapshot_active, 0);
    g_held_count = 0;
}

__attribute__((constructor)) static void register_snapshot_fork_handler(void) {
    pthread_atfork(NULL, NULL, snapshot_after_fork_in_child);
}

int sw_snapshot_hold(const int32_t *tids, size_t n, sw_unwinder_t unwinder, uint32_t max_frames,
                     int64_t timeout_ns, int64_t park_ns, sw_stack_t *outs, int *results) {
    if (n == 0) return 0;
    if (n > SW_SLOTS / 2 || park_ns <= 0 || tids == NULL || outs == NULL || results == NULL) {
        return SW_ERR_INVALID;
    }
    int rc = sw_request_validate(tids[0] == sw_gettid() ? 1 : tids[0], unwinder, max_frames, timeout_ns);
    if (rc != 0 && rc != SW_ERR_SELF) return rc;
    if (max_frames > SW_MAX_FRAMES) max_frames = SW_MAX_FRAMES;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&g_snapshot_active, &expected, 1)) return SW_ERR_BUSY;
    int signo = sw_sampler_signal();
    int32_t self = sw_gettid();
    // Thread ids are reused: a new thread behind a known id has a stack the table may not hold yet,
    // and a held thread gets no second chance. Snapshots are rare; read the map afresh.
    sw_maps_rebuild();
    uint32_t token = g_token = sw_slots_new_park_token();
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
        if ((results[i] = sw_target_check_new(tid, signo, INT64_MAX)) != 0) continue;
        uint32_t gen;
        int idx = sw_slot_claim(&gen);
        if (idx < 0) { results[i] = SW_ERR_BUSY; continue; }
        sw_slot_t *s = sw_slot(idx);
        s->max_frames = max_frames;
        s->unwinder = (uint8_t)unwinder;
        s->park = 1;
        s->bounds.lo = s->bounds.end = s->bounds.gen = s->bounds.readable = 0; // a snapshot reads the map afresh
        atomic_store_explicit(&s->tid, tid, memory_order_relaxed);
        s->park_token = token;
        s->park_deadline_ns = park_deadline;
        sw_slot_arm(s, gen);
        sent_at[i] = sw_now_ns();
        results[i] = sw_slot_send(tid, signo, (uint32_t)idx, gen);
        if (results[i] != 0) {
            sw_slot_disarm(s, gen);
            continue;
        }
        idxs[i] = idx;
        gens[i] = gen;
    }
    g_held_count = 0;
    int held = 0;
    for (size_t i = 0; i < n; i++) {
        if (idxs[i] < 0) continue;
        sw_slot_t *s = sw_slot(idxs[i]);
        uint32_t final_state = 0;
        if (sw_slot_wait(s, gens[i], deadline, &final_state) != 0) {
            if (sw_slot_abandon(s, gens[i]) == 0) {
                // It is in the handler and will park: keep it in the held set so release frees it.
                if (sw_slot_wait(s, gens[i], sw_now_ns() + 2000000, &final_state) != 0) {
                    results[i] = SW_ERR_TIMED_OUT;
                    continue;
                }
            } else {
                sw_target_forget(tids[i]);
                results[i] = sw_target_silence(tids[i], signo, sent_at[i]);
                continue;
            }
        }
        if (final_state != ST_PARKED) {
            results[i] = SW_ERR_TIMED_OUT; // it answered but had already left its park
            sw_slot_free(s, gens[i]);
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
        sw_capture_collect(sw_slot(idxs[i]), tids[i], max_frames, 1, park_deadline, &outs[i]);
        outs[i].latency_ns = latency;
    }
    return held;
}

int sw_snapshot_release(void) {
    if (!atomic_load(&g_snapshot_active)) return SW_ERR_INVALID;
    sw_slots_release(g_token);
    int consistent = 1;
    for (size_t k = 0; k < g_held_count; k++) {
        sw_slot_t *s = sw_slot(g_held_idx[k]);
        uint32_t gen = g_held_gen[k];
        uint32_t e = WORD(gen, ST_PARKED);
        if (!atomic_compare_exchange_strong(&s->state, &e, WORD(gen, ST_FREE))) {
            consistent = 0; // it left on its own deadline before we released it
            sw_slot_free(s, gen);
        }
    }
    g_held_count = 0;
    atomic_store(&g_snapshot_active, 0);
    return consistent;
}

#endif // SW_PLATFORM_SAMPLES
