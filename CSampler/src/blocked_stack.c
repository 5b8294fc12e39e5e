// The user stack of a thread blocked in a system call, recovered without a signal.
//
// Signalling such a thread would make nanosleep/epoll_wait/poll return EINTR even with SA_RESTART
// (signal(7); measured: a 400 ms usleep returned after 50 ms when the signal came). The kernel
// already tells its SP and PC (/proc/self/task/TID/syscall); the PC is inside a libc wrapper built
// without frame pointers, which the unwind tables walk through (sw_walk).
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SW_SCAN_BYTES SW_BLOCKED_SCAN_BYTES


// A return address points just past a call instruction (sw_arch.h). Code is read with
// sw_read_own: the module could be unloaded meanwhile by another thread.
static int looks_like_return(uint64_t ret) {
    if (ret < 8 || !sw_maps_is_exec(ret)) return 0;
    uint8_t c[8];
    if (sw_read_own(c, ret - 8, 8) != 8) return 0;
    return sw_arch_ends_with_call(ret, c + 8);
}

static uint64_t word_at(const uint64_t *w, uint64_t base, uint64_t nwords, uint64_t addr, int *ok) {
    if (addr < base || (addr - base) / 8 >= nwords || (addr & 7) != 0) {
        *ok = 0;
        return 0;
    }
    *ok = 1;
    return w[(addr - base) / 8];
}

// A frame record at `a` is plausible when its saved FP points further up the stack (or is 0) and
// its return address is in executable memory, and the same holds for the next record.
static int plausible_record(const uint64_t *w, uint64_t base, uint64_t nwords, uint64_t hi, uint64_t a) {
    int ok1, ok2;
    uint64_t next = word_at(w, base, nwords, a, &ok1);
    uint64_t ret = sw_arch_code_address(word_at(w, base, nwords, a + 8, &ok2));
    if (!ok1 || !ok2 || !looks_like_return(ret)) return 0;
    // A saved FP of 0 marks the outermost frame, which lives near the stack's top; anywhere else a
    // zero followed by a return address is just a zeroed local beside one (seen in libc's sleep).
    if (next == 0) return hi - a <= 4096;
    if (next <= a || next >= hi || (next & 7) != 0) return 0;
    uint64_t ret2 = sw_arch_code_address(word_at(w, base, nwords, next + 8, &ok2));
    return !ok2 || ret2 == 0 || looks_like_return(ret2);
}

// Calls that already returned leave their frame records behind, below the live ones: a "ghost"
// [saved FP, return address] is as plausible as a live record and, taken for the first one, skips
// every live frame between it and the frame it points at (seen: a Dispatch block asleep in usleep
// reported as __nanosleep <- the block's thunk, its own two frames lost). A live frame has one live
// callee record, the one holding its FP nearest below it; a lower record holding the same FP is a
// ghost. Returns 1 for a ghost at `a` (its saved FP is `next`).
static int is_ghost_record(const uint64_t *w, uint64_t base, uint64_t nwords, uint64_t hi, uint64_t a,
                           uint64_t next) {
    if (next == 0) return 0;
    for (uint64_t b = a + 16; b + 16 <= next; b += 8) {
        int ok;
        uint64_t v = word_at(w, base, nwords, b, &ok);
        if (!ok) return 0;
        if (v == next && plausible_record(w, base, nwords, hi, b)) return 1;
    }
    return 0;
}

// The first live frame record at or above `from`: plausible, and not a ghost. 0 when none.
static uint64_t find_record(const uint64_t *w, uint64_t base, uint64_t nwords, uint64_t hi, uint64_t from) {
    uint64_t i = from > base ? (from - base + 7) / 8 : 0;
    for (; i + 1 < nwords; i++) {
        if (!plausible_record(w, base, nwords, hi, base + i * 8)) continue;
        if (is_ghost_record(w, base, nwords, hi, base + i * 8, w[i])) continue;
        return base + i * 8;
    }
    return 0;
}

// For a PC with no unwind-table row (generated code): every word below the first frame record
// that is a return address is taken for a frame, then the record chain. A guess, marked as such
// by its stop reason when the chain does not reach the root.
static void legacy_scan(const uint64_t *w, uint64_t base, uint64_t nwords, uint64_t hi, uint32_t max_frames,
                        sw_stack_t *out) {
    out->count = 1;
    uint64_t record = 0;
    uint64_t ghosts[8];
    unsigned ghost_count = 0;
    for (uint64_t i = 0; i + 1 < nwords; i++) {
        if (!plausible_record(w, base, nwords, hi, base + i * 8)) continue;
        if (is_ghost_record(w, base, nwords, hi, base + i * 8, w[i])) {
            // Its return address is stale too: not one of the wrappers' frames below.
            if (ghost_count < sizeof ghosts / sizeof ghosts[0]) ghosts[ghost_count++] = i + 1;
            continue;
        }
        record = base + i * 8;
        break;
    }
    if (record == 0) {
        out->stop_reason = SW_STOP_NO_UNWIND_INFO;
        return;
    }
    for (uint64_t i = 0, g = 0; base + i * 8 < record && out->count < max_frames; i++) {
        while (g < ghost_count && ghosts[g] < i) g++;
        if (g < ghost_count && ghosts[g] == i) continue;
        uint64_t ret = sw_arch_code_address(w[i]);
        if (looks_like_return(ret)) out->frames[out->count++] = ret;
    }
    uint64_t fp = record;
    uint64_t prev = base;
    out->stop_reason = SW_STOP_ROOT;
    while (out->count < max_frames) {
        int ok1, ok2;
        if (fp == 0) break;
        if (fp < prev || fp >= hi || (fp & 7) != 0) {
            out->stop_reason = SW_STOP_BAD_LINK;
            break;
        }
        uint64_t next = word_at(w, base, nwords, fp, &ok1);
        uint64_t ret = sw_arch_code_address(word_at(w, base, nwords, fp + 8, &ok2));
        if (!ok1 || !ok2) {
            out->stop_reason = SW_STOP_UNREADABLE; // beyond what we copied
            break;
        }
        if (ret == 0) break;
        out->frames[out->count++] = ret;
        next &= ~(1ULL << 60);
        if (next != 0 && next <= fp) {
            out->stop_reason = SW_STOP_BAD_LINK;
            break;
        }
        prev = fp + 16;
        fp = next;
    }
    if (out->count >= max_frames) out->stop_reason = SW_STOP_FRAME_LIMIT;
}

int sw_capture_blocked(int32_t tid, const sw_thread_syscall_t *sc, uint32_t max_frames, sw_stack_t *out) {
    return sw_capture_blocked_into(tid, sc, max_frames, out, NULL, 0);
}

int sw_capture_blocked_into(int32_t tid, const sw_thread_syscall_t *sc, uint32_t max_frames, sw_stack_t *out,
                            void *scratch, size_t scratch_bytes) {
    if (sc == NULL || out == NULL || max_frames == 0) return SW_ERR_INVALID;
    if (sc->nr == -2 || sc->sp == 0 || sc->pc == 0) return SW_ERR_NOT_BLOCKED;
    if (max_frames > SW_MAX_FRAMES) max_frames = SW_MAX_FRAMES;
    memset(out, 0, offsetof(sw_stack_t, frames) + sizeof(uint64_t));
    out->frames[0] = sc->pc;
    out->count = 1;
    out->unwinder = SW_UNWIND_SYSCALL_SCAN;
    out->leaf_word_count = 0;
    out->leaf_caller_recovered = 0;
    out->tid = tid;
    out->sp = sc->sp;
    out->handler_ns = 0;
    out->latency_ns = 0;
    // When the stack was read (the registers in `sc` were read just before).
    out->taken_at_ns = (uint64_t)sw_now_ns();
    // No handler runs on a blocked thread: its task's tag is read from outside.
    out->request_tag = sw_blocked_request_tag(tid, sc);
    out->task_id = 0; // the handler reads it on the thread: a blocked one runs none
    out->task_priority = 0;
    uint64_t lo, hi;
    if (!sw_maps_find(sc->sp, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi)) {
        sw_maps_rebuild();
        if (!sw_maps_find(sc->sp, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi)) {
            out->truncated = 1;
            out->stop_reason = SW_STOP_STACK_UNKNOWN;
            return 0;
        }
    }
    out->stack_known = 1;
    uint64_t base = sc->sp & ~7ULL;
    size_t len = hi - base > SW_SCAN_BYTES ? SW_SCAN_BYTES : (size_t)(hi - base);
    // The caller's scratch when it holds the scan (the watchdog asks every round: no malloc then).
    int own = scratch == NULL || scratch_bytes < len || ((uintptr_t)scratch & 7) != 0;
    uint64_t *w = own ? malloc(len) : scratch;
    if (w == NULL) return -ENOMEM;
    uint64_t nwords = sw_read_own(w, base, len) / 8;
    // The kernel tells PC and SP, not the frame pointer. The unwind tables need none through the
    // libc wrappers (built without frame pointers, their rows are on SP): they reach the first
    // caller exactly. Only a frame that keeps its CFA in the frame pointer needs it: its record is
    // then found by a checked scan above SP, and the walk goes on from there.
    sw_walk_mem_t mem = {.lo = base, .hi = base + nwords * 8, .copy = (const uint8_t *)w, .base = base, .guard_tables = 1};
    sw_walk_regs_t regs = {.pc = sc->pc, .sp = sc->sp, .fp = 0, .lr = 0, .fp_known = 0, .lr_known = 0};
    sw_walk_result_t res = {0};
    out->count = 0;
    sw_stack_clear_async(out);
    sw_walk(&regs, &mem, 0, out->frames, &out->count, max_frames, &res);
    sw_stack_take_async(out, &res);
    if (res.stop == SW_STOP_NEED_FP) {
        uint64_t record = find_record(w, base, nwords, hi, res.sp);
        if (record == 0) {
            out->stop_reason = SW_STOP_BAD_LINK;
        } else {
            sw_walk_regs_t from = {.pc = res.pc, .sp = res.sp, .fp = record, .lr = 0, .fp_known = 1, .lr_known = 0};
            sw_walk_result_t more = {0};
            sw_walk(&from, &mem, 1, out->frames, &out->count, max_frames, &more);
            sw_stack_take_async(out, &more);
            more.table_frames += res.table_frames;
            res = more;
            out->stop_reason = res.stop == SW_STOP_NEED_FP ? SW_STOP_BAD_LINK : res.stop;
        }
    } else if (res.stop != SW_STOP_NO_ROW_AT_PC) {
        out->stop_reason = res.stop;
    } else {
        legacy_scan(w, base, nwords, hi, max_frames, out);
    }
    out->table_frames = (uint8_t)(res.table_frames > 255 ? 255 : res.table_frames);
    out->truncated = out->stop_reason != SW_STOP_ROOT;
    if (own) free(w);
    return 0;
}

#if SW_ARCH_LEAF_CALLER_IN_LR
// Most code a `bl` lands in before the interrupted PC, for the call to count as the leaf's entry.
#define SW_LEAF_MAX_BYTES (1u << 20)

// LR is also left stale by the interrupted function's own calls that already returned: then it
// points into that same function, just as a leaf's caller's address would. For a direct `bl` the
// two can be told apart: a leaf was entered at the bl's target, so PC lies a little after it and
// the call site does not lie between them; a stale LR's target is some function called earlier.
// A call through a register (`blr`) or a stub (PLT, veneer) cannot be checked this cheaply and is
// kept: frames[1] is marked as the guess it is (leaf_caller_recovered).
static int lr_can_be_callers(uint64_t lr, uint64_t pc) {
    uint8_t c[8];
    if (sw_read_own(c, lr - 8, 8) != 8) return 0;
    uint64_t target = sw_arch_direct_call_target(lr, c + 8);
    if (target == 0) return 1;
    uint64_t site = lr - 4;
    if (target <= pc && pc - target < SW_LEAF_MAX_BYTES && !(site >= target && site <= pc)) return 1;
    uint8_t stub[8];
    return sw_read_own(stub, target, 8) == 8 && sw_arch_is_call_stub(stub);
}
#endif

void sw_recover_leaf_caller(sw_stack_t *st) {
    uint8_t n = st->leaf_word_count;
    st->leaf_word_count = 0; // consumed: a second call must not insert twice
    if (st->unwinder != SW_UNWIND_FRAME_POINTER || st->count == 0 || n > 8) return;
    uint64_t pc = st->frames[0];
    uint64_t first_ret = st->count > 1 ? st->frames[1] : 0;
    for (uint8_t i = 0; i < n; i++) {
        uint64_t word = st->leaf_words[i];
        if (word == first_ret || word == pc) return; // the caller's record is next: not a leaf
        if (!looks_like_return(word)) continue;
#if SW_ARCH_LEAF_CALLER_IN_LR
        if (!lr_can_be_callers(word, pc)) return;
#endif
        uint32_t keep = st->count < SW_MAX_FRAMES ? st->count : SW_MAX_FRAMES - 1;
        if (keep < st->count) st->truncated = 1;
        memmove(&st->frames[2], &st->frames[1], sizeof(uint64_t) * (keep - 1));
        st->frames[1] = word;
        st->count = keep + 1;
        if (st->async_count != 0) {
            // The async frames moved up by one with the rest; one cut at the end is one fewer.
            st->async_at++;
            if (st->async_at >= st->count) sw_stack_clear_async(st);
            else if (st->async_at + st->async_count > st->count) st->async_count = (uint8_t)(st->count - st->async_at);
        }
        st->leaf_caller_recovered = 1;
        return;
    }
}

#endif // SW_PLATFORM_SAMPLES
