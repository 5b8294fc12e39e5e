// Capture one thread's stack by request and answer: claim a slot, signal the thread, wait for its
// handler's answer, unwind the answer here. The caller's timeout covers all of it.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_requests.h"
#include "sw_async.h"
#include "sw_threads.h"

#include <string.h>

// Copies the answer out of the slot and, for libunwind, unwinds it here (outside the handler).
void sw_capture_collect(sw_slot_t *s, int32_t tid, uint32_t max_frames, int live, int64_t deadline_ns, sw_stack_t *out) {
    const sw_stack_t *st = &sw_slot_payload(s)->stack;
    out->count = st->count;
    out->unwinder = st->unwinder;
    out->truncated = st->truncated;
    out->stop_reason = st->stop_reason;
    out->table_frames = st->table_frames;
    out->async_at = st->async_at;
    out->async_count = st->async_count;
    out->async_end = st->async_end;
    out->async_ctx = st->async_ctx;
    out->stack_known = st->stack_known;
    out->tid = tid;
    out->sp = st->sp;
    out->handler_ns = st->handler_ns;
    out->taken_at_ns = st->taken_at_ns;
    out->request_tag = st->request_tag;
    out->task_id = st->task_id;
    out->task_priority = st->task_priority;
    memcpy(out->frames, st->frames, sizeof(uint64_t) * st->count);
    // A chain the handler could not read in place: read on now, through the kernel.
    sw_async_chain_complete(out, max_frames);
    memcpy(out->leaf_words, st->leaf_words, sizeof st->leaf_words);
    out->leaf_word_count = st->leaf_word_count;
    out->leaf_caller_recovered = 0;
    if (st->unwinder == SW_UNWIND_FRAME_POINTER) sw_recover_leaf_caller(out);
    if (st->unwinder == SW_UNWIND_LIBUNWIND) {
        sw_stack_view_t view;
        memset(&view, 0, sizeof view);
        view.regs = &sw_slot_payload(s)->regs;
        if (live) {
            uint64_t lo = 0, hi = 0;
            if (sw_maps_find(st->sp, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi)) {
                view.live_lo = st->sp - SW_ARCH_RED_ZONE >= lo ? st->sp - SW_ARCH_RED_ZONE : lo;
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

// Whether the thread sleeps interruptibly now: 1, 0, or -1 when its stat cannot be read (the signal
// is then sent, and says whether the thread is gone).
static int thread_sleeps_now(int32_t tid) {
    sw_thread_stat_t st;
    if (sw_thread_stat(tid, &st) != 0) return -1;
    return st.state == 'S';
}

static int capture(int32_t tid, sw_unwinder_t unwinder, uint32_t max_frames, int64_t timeout_ns,
                   int only_awake, sw_stack_t *out) {
    int rc = sw_request_validate(tid, unwinder, max_frames, timeout_ns);
    if (rc != 0) return rc;
    if (max_frames > SW_MAX_FRAMES) max_frames = SW_MAX_FRAMES;
    sw_async_refresh_maps_if_stale();
    int signo = sw_sampler_signal();
    int64_t t_start = sw_now_ns();
    int64_t deadline = t_start + timeout_ns;
    // A thread that has still not taken the signal of an earlier request that went unanswered is
    // inside something no signal interrupts (one long read of a cached file: the signal is
    // delivered when the call returns). A new signal would be merged into the pending one (a
    // standard signal) or queued behind it, answered no sooner: said now, instead of waiting the
    // whole timeout again, so the caller takes the kernel's sample at once.
    int64_t pending_since = 0;
    if (sw_target_still_pending(tid, signo, &pending_since) == 1) {
        out->latency_ns = (uint64_t)(t_start - pending_since);
        return SW_ERR_STILL_PENDING;
    }
    // The deadline covers everything: the new-thread check, the signal, the unwind, the retry.
    rc = sw_target_check_new(tid, signo, deadline);
    if (rc != 0) return rc;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (sw_now_ns() >= deadline) return SW_ERR_TIMED_OUT;
        uint32_t gen;
        int idx = sw_slot_claim(&gen);
        if (idx < 0) return SW_ERR_BUSY;
        sw_slot_t *s = sw_slot(idx);
        s->max_frames = max_frames;
        s->unwinder = (uint8_t)unwinder;
        s->park = 0;
        atomic_store_explicit(&s->tid, tid, memory_order_relaxed);
        sw_target_bounds_get(tid, &s->bounds);
        if (unwinder == SW_UNWIND_LIBUNWIND && (rc = sw_slot_ensure_copy(s)) != 0) {
            sw_slot_free(s, gen);
            return rc;
        }
        if (only_awake && thread_sleeps_now(tid) == 1) {
            sw_slot_free(s, gen);
            return SW_ERR_ASLEEP;
        }
        sw_slot_arm(s, gen);
        int64_t t_sent = sw_now_ns();
        rc = sw_slot_send(tid, signo, (uint32_t)idx, gen);
        if (rc != 0) {
            sw_slot_disarm(s, gen);
            if (rc == SW_ERR_THREAD_GONE) sw_target_forget(tid);
            return rc;
        }
        uint32_t final_state = 0;
        rc = sw_slot_wait(s, gen, deadline, &final_state);
        if (rc != 0) {
            if (sw_slot_abandon(s, gen) == 0) {
                // Give the running handler a moment: it is bounded and almost done.
                sw_slot_wait(s, gen, sw_now_ns() + 1000000, &final_state);
            }
            sw_target_forget(tid);
            return sw_target_silence(tid, signo, t_sent);
        }
        int64_t t_answer = sw_now_ns();
        if (!sw_slot_payload(s)->stack.stack_known && attempt == 0) {
            // The stack is newer than our map table: refresh and ask once more.
            sw_slot_free(s, gen);
            if (sw_maps_rebuild_until(deadline) == SW_ERR_TIMED_OUT) return SW_ERR_TIMED_OUT;
            continue;
        }
        sw_capture_collect(s, tid, max_frames, 0, deadline, out);
        out->latency_ns = (uint64_t)(t_answer - t_sent);
        if (out->stack_known) sw_target_bounds_put(tid, &s->bounds);
        sw_slot_free(s, gen);
        return 0;
    }
    return SW_ERR_TIMED_OUT;
}

int sw_capture(int32_t tid, sw_unwinder_t unwinder, uint32_t max_frames, int64_t timeout_ns,
               sw_stack_t *out) {
    return capture(tid, unwinder, max_frames, timeout_ns, 0, out);
}

int sw_capture_awake(int32_t tid, sw_unwinder_t unwinder, uint32_t max_frames, int64_t timeout_ns,
                       sw_stack_t *out) {
    return capture(tid, unwinder, max_frames, timeout_ns, 1, out);
}

#endif // SW_PLATFORM_SAMPLES
