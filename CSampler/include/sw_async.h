// Swift async call chains: where a stalled job's callers are once its code resumed after an
// `await`. Async calls are tail calls, so a resumed function's machine caller is the concurrency
// runtime's job runner; its own callers live in the task's chain of async contexts, each beginning
// with its parent context and the resume function to return to. The frame of a function the
// runner resumed keeps its context just below its frame record (the extended frame layout).
//
// Nothing about the runtime is compiled in: sw_async_learn, called from inside a Swift async
// function that really suspended, finds the runner as that function's caller and checks the chain
// it can see against what it knows of itself. Until it succeeds, walks add no async frames.
#ifndef SW_ASYNC_H
#define SW_ASYNC_H

#include <stdint.h>
#include "sw_capture.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Learns the job runner's code range and checks the async context layout from the calling
/// function's frame. Call it directly from a Swift async function (not inlined into a synchronous
/// caller) after an `await` that suspended, with `depth` async callers of its own above it (each
/// awaiting the next). Returns 1 when learnt (also when learnt before), 0 when this call could not
/// tell (the caller did not run as a resumed function: try again after another suspension), -1 when
/// the layout differs from the one expected (`*why`, when not NULL, receives a static sentence).
/// Not for handlers (dladdr, fault-safe reads).
int sw_async_learn(uint32_t depth, const char **why);

/// 1 when async chains are walked, 0 while not learnt, -1 when learning failed (`*why` as above).
int sw_async_state(const char **why);

/// Reads on, off the sampled thread and at once, the async chain a handler's walk could not read
/// (async_end SW_ASYNC_UNREADABLE: a context whose mapping the map table did not know yet), through
/// the kernel, and inserts the frames it finds at async_at + async_count, after those the handler
/// read. sw_capture does it for every answer. Not for handlers.
void sw_async_chain_complete(sw_stack_t *st, uint32_t max_frames);

/// For benchmarks: 0 makes walks pass async functions by as if nothing had been learnt (the same
/// stack without its async callers), 1 follows the chains again. Learning is not undone.
void sw_async_walks_enable(int on);

#ifdef __cplusplus
}
#endif
#endif
