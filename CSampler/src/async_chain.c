// Learning where Swift's concurrency runtime resumes tasks, and that its async contexts read as
// [parent, resume function] (sw_async.h). Never compiled in: a runtime whose layout differs is
// found out here, once, instead of being misread in every sample.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_internal.h"
#include "sw_async.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

_Atomic uint64_t g_sw_async_resume_ra;
_Atomic int g_sw_async_maps_stale;
static _Atomic int64_t g_last_refresh_ns;
static _Atomic int g_state;                  // 1 learnt, 0 not yet, -1 failed
static _Atomic(const char *) g_why;
static _Atomic uint64_t g_learnt_ra; // kept while walks are switched off (sw_async_walks_enable)

static int fail(const char *why, const char **out) {
    atomic_store_explicit(&g_why, why, memory_order_relaxed);
    atomic_store_explicit(&g_state, -1, memory_order_release);
    if (out != NULL) *out = why;
    return -1;
}

// The object holding `pc` (its load base), 0 when none.
static uint64_t object_of(uint64_t pc, const char **path) {
    Dl_info info;
    if (dladdr((void *)(uintptr_t)pc, &info) == 0 || info.dli_fbase == NULL) return 0;
    if (path != NULL) *path = info.dli_fname;
    return (uint64_t)(uintptr_t)info.dli_fbase;
}

static int is_concurrency_runtime(const char *path) {
    return path != NULL && strstr(path, "libswift_Concurrency") != NULL;
}

// Not inlined into its caller, and its frame kept: the records it reads are its caller's.
SW_RAW_STACK_READER __attribute__((noinline)) int sw_async_learn(uint32_t depth, const char **why) {
    int state = atomic_load_explicit(&g_state, memory_order_acquire);
    if (state != 0) {
        if (state < 0 && why != NULL) *why = atomic_load_explicit(&g_why, memory_order_relaxed);
        return state;
    }
    // This function's record: [the caller's frame pointer, the return address into the caller].
    const uint64_t *own = __builtin_frame_address(0);
    uint64_t caller_pc = sw_arch_code_address(own[1]);
    uint64_t record = own[0] & ~SW_ASYNC_FP_BIT;
    uint64_t lo = 0, hi = 0;
    if (!sw_maps_find((uint64_t)(uintptr_t)own, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi)) {
        sw_maps_rebuild();
        if (!sw_maps_find((uint64_t)(uintptr_t)own, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi)) {
            return fail("the probe's own stack is in no mapping of /proc/self/maps", why);
        }
    }
    if (record < (uint64_t)(uintptr_t)own || record + 16 > hi || (record & 7) != 0) return 0;
    // The caller's record: its return address is the runner's, when the runtime resumed it.
    const uint64_t *caller = (const uint64_t *)(uintptr_t)record;
    uint64_t runner_ra = sw_arch_code_address(caller[1]);
    const char *runner_path = NULL;
    if (object_of(runner_ra, &runner_path) == 0 || !is_concurrency_runtime(runner_path)) {
        return 0; // called before a suspension, or from a synchronous caller: not this time
    }
    // The chain: the caller's context below its record, then [parent, resume] pairs. The first
    // resume function belongs to the caller's own code (its async caller, same object), and after
    // `depth` of them the task's first context (parent null) resumes into the runtime.
    const char *caller_path = NULL;
    uint64_t caller_object = object_of(caller_pc, &caller_path);
    if (caller_object == 0) return fail("the async function calling the probe is in no loaded object", why);
    uint64_t ctx = caller[-1];
    uint32_t links = 0, own_links = 0;
    uint64_t last_resume = 0;
    while (ctx != 0) {
        if (links >= SW_ASYNC_MAX_FRAMES) return fail("the async context chain does not end", why);
        uint64_t w[2];
        if ((ctx & 7) != 0 || sw_read_own(w, ctx, 16) != 16) {
            return fail("an async context is not readable where the extended frame layout puts it", why);
        }
        uint64_t resume = sw_arch_code_address(w[1]);
        uint64_t resume_object = object_of(resume, NULL);
        if (resume_object == 0) return fail("an async context's second word is not code (not a resume function)", why);
        if (links < depth && resume_object != caller_object) {
            return fail("the probe's async callers are not the first resume functions of its chain", why);
        }
        if (resume_object == caller_object) own_links++;
        last_resume = resume;
        links++;
        ctx = w[0];
    }
    const char *last_path = NULL;
    if (links <= depth || own_links < depth || object_of(last_resume, &last_path) == 0 ||
        !is_concurrency_runtime(last_path)) {
        return fail("the async context chain does not end in the concurrency runtime", why);
    }
    sw_task_identity_prime(); // before any walk can meet the runner and name its task
    atomic_store_explicit(&g_learnt_ra, runner_ra, memory_order_relaxed);
    atomic_store_explicit(&g_sw_async_resume_ra, runner_ra, memory_order_release);
    atomic_store_explicit(&g_state, 1, memory_order_release);
    return 1;
}

void sw_async_refresh_maps_if_stale(void) {
    if (!atomic_load_explicit(&g_sw_async_maps_stale, memory_order_relaxed)) return;
    int64_t now = sw_now_ns(), last = atomic_load_explicit(&g_last_refresh_ns, memory_order_relaxed);
    if (last != 0 && now - last < 1000000000) return;
    if (!atomic_compare_exchange_strong(&g_last_refresh_ns, &last, now)) return; // another thread does it
    atomic_store_explicit(&g_sw_async_maps_stale, 0, memory_order_relaxed);
    // A rebuild that failed (no file descriptor free) leaves the table stale: asked again a second on.
    if (sw_maps_rebuild() != 0) atomic_store_explicit(&g_sw_async_maps_stale, 1, memory_order_relaxed);
}

void sw_async_chain_complete(sw_stack_t *st, uint32_t max_frames) {
    if (max_frames > SW_MAX_FRAMES) max_frames = SW_MAX_FRAMES;
    if (st->async_end != SW_ASYNC_UNREADABLE || st->async_ctx == 0 || st->count > max_frames) return;
    uint32_t at = st->async_at, n = st->async_count;
    if (at == 0 || at + n > st->count) {
        n = 0;
        // Nothing was read: the chain begins right after the async function's frame, which is the
        // frame before the runner's return address.
        uint64_t ra = atomic_load_explicit(&g_sw_async_resume_ra, memory_order_relaxed);
        uint32_t i = 1;
        while (i < st->count && st->frames[i] != ra) i++;
        if (i >= st->count) return;
        at = i;
    }
    uint64_t found[SW_ASYNC_MAX_FRAMES];
    uint32_t k = 0, room = max_frames - st->count;
    uint64_t ctx = st->async_ctx;
    uint8_t end = SW_ASYNC_WHOLE;
    while (ctx != 0) {
        if (k >= SW_ASYNC_MAX_FRAMES - n || k >= room) {
            end = SW_ASYNC_LIMIT;
            break;
        }
        uint64_t w[2];
        if ((ctx & 7) != 0 || sw_read_own(w, ctx, 16) != 16) {
            end = SW_ASYNC_UNREADABLE;
            break;
        }
        uint64_t resume = sw_arch_code_address(w[1]);
        if (resume == 0 || object_of(resume, NULL) == 0) {
            end = SW_ASYNC_BAD_RESUME;
            break;
        }
        found[k++] = resume + 1;
        ctx = w[0];
    }
    // After the frames the handler read: the machine frames from there move up by k.
    uint32_t tail = at + n;
    memmove(&st->frames[tail + k], &st->frames[tail], sizeof(uint64_t) * (st->count - tail));
    memcpy(&st->frames[tail], found, sizeof(uint64_t) * k);
    st->count += k;
    st->async_at = (uint16_t)at;
    st->async_count = (uint8_t)(n + k);
    st->async_end = end;
    st->async_ctx = end == SW_ASYNC_UNREADABLE ? ctx : 0;
    atomic_store_explicit(&g_sw_async_maps_stale, 1, memory_order_relaxed); // the next walks read it in place
}

int sw_async_state(const char **why) {
    int state = atomic_load_explicit(&g_state, memory_order_acquire);
    if (state < 0 && why != NULL) *why = atomic_load_explicit(&g_why, memory_order_relaxed);
    return state;
}

void sw_async_walks_enable(int on) {
    uint64_t ra = on ? atomic_load_explicit(&g_learnt_ra, memory_order_relaxed) : 0;
    atomic_store_explicit(&g_sw_async_resume_ra, ra, memory_order_release);
}

#endif // SW_PLATFORM_SAMPLES
