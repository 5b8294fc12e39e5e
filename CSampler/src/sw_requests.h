// The request machinery shared by one-thread captures (capture.c) and held-still snapshots
// (snapshot.c): request slots and their protocol (request_slots.c), and which threads can be asked
// at all (request_targets.c). Internal to CSampler.
#ifndef SW_REQUESTS_H
#define SW_REQUESTS_H

#include "sw_internal.h"

#define SW_SLOTS 512
#define SW_COPY_BYTES (64 * 1024)

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
    // The target's checked stack bounds: given by the requester from what an earlier answer of the
    // same thread learned, updated by the handler, kept by the requester (request_targets.c).
    sw_stack_bounds_t bounds;
} sw_slot_t;

// The answer's bulk lives apart from the slots: requesters scan every slot's state to find a free
// one, and with the 2 KiB stacks inline that scan would make all 512 slots resident (1.1 MiB).
typedef struct sw_slot_payload {
    sw_stack_t stack;
    sw_regs_t regs;
} sw_slot_payload_t;


/// Slot `idx` (0 <= idx < SW_SLOTS) and its index back.
sw_slot_t *sw_slot(int idx);
int sw_slot_index(const sw_slot_t *s);
/// Where the handler leaves its answer for slot `s`.
sw_slot_payload_t *sw_slot_payload(sw_slot_t *s);

/// Claims a free slot (or one whose abandoned capture has since finished): its index, or -1.
int sw_slot_claim(uint32_t *gen_out);
/// Publishes a filled-in request: from now on a handler may claim it.
void sw_slot_arm(sw_slot_t *s, uint32_t gen);
/// Takes back a request no handler has claimed. 1 when it did.
int sw_slot_disarm(sw_slot_t *s, uint32_t gen);
void sw_slot_free(sw_slot_t *s, uint32_t gen);
/// Gives up on a request at its deadline. 1 when the slot was freed now, 0 when a handler is still
/// writing into it (the slot is reclaimed later).
int sw_slot_abandon(sw_slot_t *s, uint32_t gen);
/// Sends the request signal for slot `idx` to `tid`. 0, SW_ERR_THREAD_GONE or -errno.
int sw_slot_send(int32_t tid, int signo, uint32_t idx, uint32_t gen);
/// Waits until the handler answered (DONE, PARKED or LEFT) or `deadline` passes (SW_ERR_TIMED_OUT).
int sw_slot_wait(sw_slot_t *s, uint32_t gen, int64_t deadline, uint32_t *final_state);
/// Maps the slot's stack-copy buffer for libunwind on first use. 0 or -errno.
int sw_slot_ensure_copy(sw_slot_t *s);
/// A new park token: handlers of requests carrying it park until sw_slots_release(token).
uint32_t sw_slots_new_park_token(void);
void sw_slots_release(uint32_t token);

/// Checks a request's arguments. 0, SW_ERR_NOT_INSTALLED, SW_ERR_INVALID or SW_ERR_SELF.
int sw_request_validate(int32_t tid, sw_unwinder_t unwinder, uint32_t max_frames, int64_t timeout_ns);
/// Before the first request to a thread: 0 when it can be asked, else why not. Never waits past
/// `deadline_ns`.
int sw_target_check_new(int32_t tid, int signo, int64_t deadline_ns);
/// Forgets that `tid` was checked (it did not answer, or it is gone).
void sw_target_forget(int32_t tid);
/// The checked stack bounds an earlier answer of `tid` learned (zeros when none), and storing
/// those a new answer learned. Not for handlers.
void sw_target_bounds_get(int32_t tid, sw_stack_bounds_t *out);
void sw_target_bounds_put(int32_t tid, const sw_stack_bounds_t *b);
/// Why a thread did not answer: gone, blocking the signal, or just late. Late: the request's
/// signal, sent at `sent_ns`, is remembered for sw_target_still_pending.
int sw_target_silence(int32_t tid, int signo, int64_t sent_ns);
/// Whether the signal of the last unanswered request to `tid` is still pending for it: 1, with
/// `*sent_ns` when it was sent; 0 otherwise (the thread took it, or was never late), and it is
/// forgotten. Reads /proc only for a thread that was late.
int sw_target_still_pending(int32_t tid, int signo, int64_t *sent_ns);

/// Copies the answer out of slot `s` into `out` and, for libunwind, unwinds it (here, outside any
/// handler), not past `deadline_ns`. `live`: the thread is held still, read its stack in place.
void sw_capture_collect(sw_slot_t *s, int32_t tid, uint32_t max_frames, int live, int64_t deadline_ns,
                        sw_stack_t *out);

#endif
