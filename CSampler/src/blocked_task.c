// The request tag of a thread blocked in a system call, read without signalling it.
//
// A thread blocked from its job's start is never signalled (a signal would end its nanosleep,
// epoll_wait or read with EINTR), so the handler's task-local lookup (request_tag.c) never runs
// there. Its tag is read from outside instead, by the watchdog, in four hops through memory the
// Swift runtime and glibc lay out the same way on every thread and for every task:
//   tid -> thread pointer: glibc puts the thread descriptor (and the thread pointer) at a fixed
//          distance below the top of the thread's stack mapping; its `tid` field confirms it;
//   thread pointer -> current task: the concurrency runtime keeps the running task in a
//          thread-local of static TLS, at a fixed offset from the thread pointer;
//   task -> task-local list head -> items: fixed offsets in the task and in each item.
// None of these offsets is compiled in (they are private to glibc and to the Swift runtime and
// change between versions): each is learned at run time where the answer is known — on a thread
// running a request's task, inside two nested bindings of the tag with marker values — and
// trusted only once a second observation (another thread, another task) finds the same one and
// no other. Until then, or when learning failed, no tag is read: never a guess.
//
// Every read of the other thread's memory goes through process_vm_readv (a freed task or item
// gives a failed read, not a fault). The thread may have run meanwhile; the tag counts only if the
// thread is still in the same system call at the same SP and PC and has not been scheduled since
// the first read. Nothing here runs in a signal handler.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_internal.h"
#include "sw_job_stamps.h"
#include "sw_threads.h"

#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#if defined(__clang__) && defined(__has_attribute)
#if __has_attribute(swiftcall)
#define SW_TASK_SWIFTCALL __attribute__((swiftcall))
#endif
#endif
#ifndef SW_TASK_SWIFTCALL
#define SW_TASK_SWIFTCALL
#endif
// The running task (libswift_Concurrency, exported ABI). No arguments and a pointer result: the
// same registers as C. Weak for the C-only builds, which then learn nothing.
extern void *swift_task_getCurrent(void) SW_TASK_SWIFTCALL __attribute__((weak));
// The task's own allocator (same ABI note): learning allocates from it to tell the list head from
// the allocator's pointer to its newest block, which also points at the newest item until then.
extern void *swift_task_alloc(size_t size) SW_TASK_SWIFTCALL __attribute__((weak));
extern void swift_task_dealloc(void *ptr) SW_TASK_SWIFTCALL __attribute__((weak));

#define MAX_CANDIDATES 8
#define ITEM_WORDS 8          // words of a task-local item searched for key, value and next link
#define TASK_WORDS 128        // words of a task searched for its task-local list head
#define TLS_SCAN_MAX 8192     // bytes of the runtime's TLS block searched for the current task
#define TID_SCAN_BYTES 4096   // bytes of glibc's thread descriptor searched for the tid
#define MAX_OBSERVATIONS 16   // observations without a unique answer before giving up
#define MAX_ITEMS 64          // task-local items walked for one read
#define LINK_MASK 3ULL        // low bits of an item's next link: the link's kind

typedef struct item_layout {
    int64_t head;  // offset of the list head in the task
    int key, value, next;  // word indices in an item
    uint64_t seen;  // learning only: the head's value when found
} item_layout_t;

typedef struct thread_candidates {
    int count;
    int64_t v[MAX_CANDIDATES];
} candidates_t;

static pthread_mutex_t g_learn_lock = PTHREAD_MUTEX_INITIALIZER;

// Learning state (under g_learn_lock).
static int32_t g_thread_first_tid;
static int64_t g_thread_first_delta;
static candidates_t g_tid_cands;
static int g_thread_observations;
static uint64_t g_task_first;
static candidates_t g_tls_cands;
static item_layout_t g_item_cands[MAX_CANDIDATES];
static int g_item_count;
static int g_task_observations;

// What was learned, published with release once final. Read by the watchdog without the lock.
static _Atomic int g_thread_state;  // 0 learning, 1 known, -1 failed
static _Atomic int g_task_state;    // 0 learning, 1 known, -1 failed
static int64_t g_tid_off, g_stack_delta, g_tls_off;
static item_layout_t g_item;
static const char *g_why;
static atomic_uint_least64_t g_reads, g_tagged, g_discarded;

static void fail_locked(_Atomic int *state, const char *why) {
    g_why = why;
    atomic_store_explicit(state, -1, memory_order_release);
}

static void keep_common(candidates_t *c, const candidates_t *seen) {
    candidates_t out = {0};
    for (int i = 0; i < c->count; i++) {
        for (int j = 0; j < seen->count; j++) {
            if (c->v[i] == seen->v[j]) {
                out.v[out.count++] = c->v[i];
                break;
            }
        }
    }
    *c = out;
}

static void add_candidate(candidates_t *c, int64_t v) {
    if (c->count < MAX_CANDIDATES) c->v[c->count++] = v;
}

// The calling thread's stack mapping, when the thread pointer lies in it (a thread glibc created:
// descriptor and static TLS on top of the stack). The main thread's descriptor is elsewhere.
static int own_stack_mapping(uint64_t tp, uint64_t *lo, uint64_t *hi) {
    uint64_t sp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    if (!sw_maps_find(sp, SW_MAP_READ | SW_MAP_WRITE, lo, hi)) {
        sw_maps_rebuild();
        if (!sw_maps_find(sp, SW_MAP_READ | SW_MAP_WRITE, lo, hi)) return 0;
    }
    return tp >= *lo && tp < *hi;
}

// Where glibc's descriptor keeps the tid: above the thread pointer on x86_64 (TLS lies below it),
// below it on arm64 (TLS lies above): the scan never looks into TLS, where a cached tid could sit.
static void tid_offsets(uint64_t tp, uint64_t lo, uint64_t hi, int32_t tid, candidates_t *out) {
    int32_t words[TID_SCAN_BYTES / 4];
#if defined(__x86_64__)
    uint64_t from = tp;
#else
    uint64_t from = tp - TID_SCAN_BYTES;
#endif
    if (from < lo) from = lo;
    uint64_t len = hi - from < TID_SCAN_BYTES ? hi - from : TID_SCAN_BYTES;
    size_t got = sw_read_own(words, from, (size_t)len);
    out->count = 0;
    for (size_t i = 0; i < got / 4; i++) {
        if (words[i] == tid) add_candidate(out, (int64_t)(from + i * 4) - (int64_t)tp);
    }
}

static void thread_observe_locked(void) {
    if (atomic_load_explicit(&g_thread_state, memory_order_relaxed) != 0) return;
    uint64_t tp = sw_arch_thread_pointer(), lo, hi;
    if (!own_stack_mapping(tp, &lo, &hi)) return;
    int32_t tid = (int32_t)gettid();
    candidates_t seen;
    tid_offsets(tp, lo, hi, tid, &seen);
    int64_t delta = (int64_t)(hi - tp);
    if (g_thread_observations == 0) {
        g_thread_first_tid = tid;
        g_thread_first_delta = delta;
        g_tid_cands = seen;
        g_thread_observations = 1;
        if (seen.count == 0) fail_locked(&g_thread_state, "glibc's thread descriptor holds no thread id near the thread pointer");
        return;
    }
    if (tid == g_thread_first_tid) return;  // a second thread is what confirms
    if (delta != g_thread_first_delta) {
        fail_locked(&g_thread_state, "threads' descriptors lie at different distances from their stack tops");
        return;
    }
    keep_common(&g_tid_cands, &seen);
    if (g_tid_cands.count == 0) {
        fail_locked(&g_thread_state, "no offset holds the thread id in every thread's descriptor");
    } else if (g_tid_cands.count == 1) {
        g_tid_off = g_tid_cands.v[0];
        g_stack_delta = delta;
        atomic_store_explicit(&g_thread_state, 1, memory_order_release);
    } else if (++g_thread_observations > MAX_OBSERVATIONS) {
        fail_locked(&g_thread_state, "several offsets hold the thread id in every thread's descriptor");
    }
}

void sw_thread_layout_observe(void) {
    pthread_mutex_lock(&g_learn_lock);
    thread_observe_locked();
    pthread_mutex_unlock(&g_learn_lock);
}

typedef struct tls_search {
    uint64_t code;       // an address inside the runtime
    uint64_t block;      // this thread's TLS block of the module holding it
    uint64_t size;
    int found_module;
} tls_search_t;

static int find_tls_block(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    tls_search_t *s = arg;
    int inside = 0;
    const ElfW(Phdr) *tls = NULL;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && s->code >= info->dlpi_addr + ph->p_vaddr &&
            s->code < info->dlpi_addr + ph->p_vaddr + ph->p_memsz)
            inside = 1;
        if (ph->p_type == PT_TLS) tls = ph;
    }
    if (!inside) return 0;
    s->found_module = 1;
    if (tls != NULL && info->dlpi_tls_data != NULL) {
        s->block = (uint64_t)(uintptr_t)info->dlpi_tls_data;
        s->size = tls->p_memsz;
    }
    return 1;
}

// Offsets from the thread pointer of the words of the runtime's TLS block that hold `task`.
// 0 when the block is not this thread's static TLS (then nothing is learned on this thread).
static int tls_offsets(uint64_t tp, uint64_t lo, uint64_t hi, uint64_t task, candidates_t *out, const char **why) {
    tls_search_t s = {.code = (uint64_t)(uintptr_t)&swift_task_getCurrent};
    dl_iterate_phdr(find_tls_block, &s);
    if (!s.found_module) {
        *why = "the Swift concurrency runtime's module was not found";
        return -1;
    }
    if (s.block == 0) {
        *why = "the Swift concurrency runtime keeps no ELF thread-locals (the current task is not readable from outside)";
        return -1;
    }
    // Static TLS sits in the thread's own mapping, next to its descriptor; a block elsewhere is a
    // dynamically allocated one, at a different offset on every thread.
    if (s.block < lo || s.block >= hi) {
        *why = "the Swift concurrency runtime's thread-locals are not in static TLS (loaded with dlopen?)";
        return -1;
    }
    uint64_t words[TLS_SCAN_MAX / 8];
    size_t len = s.size < sizeof words ? (size_t)s.size : sizeof words;
    size_t got = sw_read_own(words, s.block, len);
    out->count = 0;
    for (size_t i = 0; i < got / 8; i++) {
        if (words[i] == task) add_candidate(out, (int64_t)(s.block + i * 8) - (int64_t)tp);
    }
    return 1;
}

static int read_words(uint64_t *w, uint64_t addr, size_t n) {
    return addr != 0 && (addr & 7) == 0 && sw_read_own(w, addr, n * 8) == n * 8;
}

// Layouts under which `task`'s list starts with the item binding `inner` whose next link is an
// item binding `outer`, both under `key`.
static int item_layouts(uint64_t task, uint64_t key, uint64_t outer, uint64_t inner, item_layout_t *out) {
    uint64_t t[TASK_WORDS];
    size_t got = sw_read_own(t, task, sizeof t) / 8;
    int n = 0;
    for (size_t h = 0; h < got; h++) {
        uint64_t head[ITEM_WORDS];
        if (!read_words(head, t[h], ITEM_WORDS)) continue;
        for (int k = 0; k < ITEM_WORDS; k++) {
            if (head[k] != key) continue;
            for (int v = k + 1; v < ITEM_WORDS; v++) {
                if (head[v] != inner) continue;
                for (int x = 0; x < ITEM_WORDS; x++) {
                    if (x == k || x == v) continue;
                    uint64_t second[ITEM_WORDS];
                    if (!read_words(second, head[x] & ~LINK_MASK, ITEM_WORDS)) continue;
                    if (second[k] != key || second[v] != outer) continue;
                    if (n < MAX_CANDIDATES)
                        out[n++] = (item_layout_t){.head = (int64_t)h * 8, .key = k, .value = v, .next = x, .seen = t[h]};
                }
            }
        }
    }
    // The head stays where it is when the task allocates something else; a pointer to the newest
    // allocation moves (measured on Swift 6.3: one at task+112 pointing 16 bytes before the item,
    // beside the real head at task+136).
    if (n > 1 && swift_task_alloc != NULL && swift_task_dealloc != NULL) {
        void *extra = swift_task_alloc(64);
        int kept = 0;
        for (int i = 0; i < n; i++) {
            uint64_t now;
            if (read_words(&now, task + (uint64_t)out[i].head, 1) && now == out[i].seen) out[kept++] = out[i];
        }
        swift_task_dealloc(extra);
        n = kept;
    }
    return n;
}

static int same_layout(item_layout_t a, item_layout_t b) {
    return a.head == b.head && a.key == b.key && a.value == b.value && a.next == b.next;
}

int sw_task_layout_observe(uint64_t outer, uint64_t inner) {
    int state = sw_blocked_tag_state(NULL);
    if (state != 0) return state;
    if (swift_task_getCurrent == NULL) return 0;
    // Someone else is learning: this request does not wait for it.
    if (pthread_mutex_trylock(&g_learn_lock) != 0) return 0;
    thread_observe_locked();
    state = atomic_load_explicit(&g_task_state, memory_order_relaxed);
    uint64_t task = (uint64_t)(uintptr_t)swift_task_getCurrent();
    const void *key = sw_request_key();
    uint64_t tp = sw_arch_thread_pointer(), lo, hi;
    if (state != 0 || task == 0 || key == NULL || task == g_task_first || !own_stack_mapping(tp, &lo, &hi)) goto out;
    candidates_t tls;
    const char *why = NULL;
    if (tls_offsets(tp, lo, hi, task, &tls, &why) < 0) {
        fail_locked(&g_task_state, why);
        goto out;
    }
    item_layout_t items[MAX_CANDIDATES];
    int n = item_layouts(task, (uint64_t)(uintptr_t)key, outer, inner, items);
    if (g_task_observations == 0) {
        g_task_first = task;
        g_tls_cands = tls;
        memcpy(g_item_cands, items, sizeof(item_layout_t) * (size_t)n);
        g_item_count = n;
        g_task_observations = 1;
        if (tls.count == 0) fail_locked(&g_task_state, "the running task was not found among the concurrency runtime's thread-locals");
        else if (n == 0) fail_locked(&g_task_state, "the task-local binding was not found in the running task");
        goto out;
    }
    keep_common(&g_tls_cands, &tls);
    int kept = 0;
    for (int i = 0; i < g_item_count; i++) {
        for (int j = 0; j < n; j++) {
            if (same_layout(g_item_cands[i], items[j])) {
                g_item_cands[kept++] = g_item_cands[i];
                break;
            }
        }
    }
    g_item_count = kept;
    g_task_observations++;
    if (g_tls_cands.count == 0) {
        fail_locked(&g_task_state, "no thread-local of the concurrency runtime held the running task on every thread");
    } else if (g_item_count == 0) {
        fail_locked(&g_task_state, "tasks keep their task-local bindings at different places");
    } else if (g_tls_cands.count == 1 && g_item_count == 1) {
        g_tls_off = g_tls_cands.v[0];
        g_item = g_item_cands[0];
        atomic_store_explicit(&g_task_state, 1, memory_order_release);
    } else if (g_task_observations > MAX_OBSERVATIONS) {
        fail_locked(&g_task_state, "the running task's thread-local or its task-local list is ambiguous");
    }
out:
    pthread_mutex_unlock(&g_learn_lock);
    return sw_blocked_tag_state(NULL);
}

// The running task's slot alone, learned from any two tasks (the watchdog starts them on the
// pool), for pool threads' jobs: what the tag reads above need besides is learned only from
// requests that bind a tag. Under g_learn_lock, published like the rest.
static _Atomic int g_slot_state;  // 0 learning, 1 known, -1 failed
static int64_t g_slot_off;
static uint64_t g_slot_first_task;
static candidates_t g_slot_cands;
static int g_slot_observations;
static const char *g_slot_why;

static void slot_fail_locked(const char *why) {
    g_slot_why = why;
    atomic_store_explicit(&g_slot_state, -1, memory_order_release);
}

int sw_task_slot_observe(void) {
    int state = sw_task_slot_state(NULL);
    if (state != 0) return state;
    if (pthread_mutex_trylock(&g_learn_lock) != 0) return 0;
    thread_observe_locked();
    if (swift_task_getCurrent == NULL) {
        slot_fail_locked("the Swift concurrency runtime is not loaded");
        goto out;
    }
    uint64_t task = (uint64_t)(uintptr_t)swift_task_getCurrent();
    uint64_t tp = sw_arch_thread_pointer(), lo, hi;
    if (atomic_load_explicit(&g_slot_state, memory_order_relaxed) != 0 || task == 0 || task == g_slot_first_task ||
        !own_stack_mapping(tp, &lo, &hi))
        goto out;
    candidates_t seen;
    const char *why = NULL;
    if (tls_offsets(tp, lo, hi, task, &seen, &why) < 0) {
        slot_fail_locked(why);
        goto out;
    }
    if (g_slot_observations++ == 0) {
        g_slot_first_task = task;
        g_slot_cands = seen;
        if (seen.count == 0) slot_fail_locked("the running task was not found among the concurrency runtime's thread-locals");
        goto out;
    }
    keep_common(&g_slot_cands, &seen);
    if (g_slot_cands.count == 0) {
        slot_fail_locked("no thread-local of the concurrency runtime held both running tasks");
    } else if (g_slot_cands.count == 1) {
        g_slot_off = g_slot_cands.v[0];
        atomic_store_explicit(&g_slot_state, 1, memory_order_release);
    } else if (g_slot_observations > MAX_OBSERVATIONS) {
        slot_fail_locked("several thread-locals of the concurrency runtime held every running task");
    }
out:
    pthread_mutex_unlock(&g_learn_lock);
    return sw_task_slot_state(NULL);
}

// The state of what is learned in two parts, the thread layout and `part` (whose failure `part_why`
// names): 1 when both are known, -1 when either failed, else 0.
static int learned_state(_Atomic int *part, const char *const *part_why, const char **why) {
    int t = atomic_load_explicit(&g_thread_state, memory_order_acquire);
    int k = atomic_load_explicit(part, memory_order_acquire);
    if (t < 0 || k < 0) {
        // The lock only for the reason: the watchdog's reads ask for the state alone.
        if (why != NULL) {
            pthread_mutex_lock(&g_learn_lock);
            *why = k < 0 ? *part_why : g_why;
            pthread_mutex_unlock(&g_learn_lock);
        }
        return -1;
    }
    return t == 1 && k == 1 ? 1 : 0;
}

int sw_task_slot_state(const char **why) { return learned_state(&g_slot_state, &g_slot_why, why); }

// Whether the descriptor at `tp` names `tid` (a thread that exited may leave its stack to another).
static int names_thread(uint64_t tp, int32_t tid) {
    int32_t seen = 0;
    return sw_read_own(&seen, tp + (uint64_t)g_tid_off, 4) == 4 && seen == tid;
}

uint64_t sw_thread_pointer_from_stack(int32_t tid, uint64_t sp) {
    if (atomic_load_explicit(&g_thread_state, memory_order_acquire) != 1 || sp == 0) return 0;
    uint64_t lo, hi;
    if (!sw_maps_find(sp, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi)) {
        // A thread born since the table was read.
        sw_maps_rebuild();
        if (!sw_maps_find(sp, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi)) return 0;
    }
    uint64_t tp = hi - (uint64_t)g_stack_delta;
    return names_thread(tp, tid) ? tp : 0;
}

int sw_thread_running_task(int32_t tid, uint64_t tp, uint64_t *task) {
    if (sw_task_slot_state(NULL) != 1 || tp == 0) return 0;
    uint64_t value = 0;
    if (!read_words(&value, tp + (uint64_t)g_slot_off, 1) || !names_thread(tp, tid)) return 0;
    *task = value;
    return 1;
}

int sw_blocked_tag_state(const char **why) { return learned_state(&g_task_state, &g_why, why); }

static int same_call(const sw_thread_syscall_t *a, const sw_thread_syscall_t *b) {
    return a->nr == b->nr && a->sp == b->sp && a->pc == b->pc && memcmp(a->args, b->args, sizeof a->args) == 0;
}

// The tag the task running on `tp` has bound to `key`; 0 when none or unreadable.
static uint64_t task_tag(uint64_t tp, uint64_t key) {
    uint64_t task;
    if (!read_words(&task, tp + (uint64_t)g_tls_off, 1) || task == 0) return 0;
    uint64_t item;
    if (!read_words(&item, task + (uint64_t)g_item.head, 1)) return 0;
    for (int i = 0; i < MAX_ITEMS && item != 0; i++) {
        uint64_t w[ITEM_WORDS];
        if (!read_words(w, item & ~LINK_MASK, ITEM_WORDS)) return 0;
        if (w[g_item.key] == key) return w[g_item.value];
        item = w[g_item.next];
    }
    return 0;
}

uint64_t sw_blocked_request_tag(int32_t tid, const sw_thread_syscall_t *sc) {
    if (sc == NULL || sc->nr < 0 || sw_blocked_tag_state(NULL) != 1) return 0;
    const void *key = sw_request_key();
    if (key == NULL) return 0;
    atomic_fetch_add_explicit(&g_reads, 1, memory_order_relaxed);
    uint64_t run0, wait0, slices0, run1, wait1, slices1;
    if (sw_thread_schedstat(tid, &run0, &wait0, &slices0) != 0) return 0;
    uint64_t lo, hi;
    if (!sw_maps_find(sc->sp, SW_MAP_READ | SW_MAP_WRITE, &lo, &hi)) return 0;
    uint64_t tp = hi - (uint64_t)g_stack_delta;
    if (!names_thread(tp, tid)) return 0;
    uint64_t tag = task_tag(tp, (uint64_t)(uintptr_t)key);
    if (tag == 0) return 0;
    // Still the same wait, and not scheduled since the first read: the task read is the one that
    // blocked; otherwise the thread may have moved on to another job meanwhile.
    sw_thread_syscall_t now;
    if (sw_thread_syscall(tid, &now) != 0 || !same_call(sc, &now) ||
        sw_thread_schedstat(tid, &run1, &wait1, &slices1) != 0 || slices1 != slices0 ||
        !names_thread(tp, tid)) {
        atomic_fetch_add_explicit(&g_discarded, 1, memory_order_relaxed);
        return 0;
    }
    atomic_fetch_add_explicit(&g_tagged, 1, memory_order_relaxed);
    return tag;
}

void sw_blocked_tag_stats(uint64_t *reads, uint64_t *tagged, uint64_t *discarded) {
    if (reads != NULL) *reads = atomic_load_explicit(&g_reads, memory_order_relaxed);
    if (tagged != NULL) *tagged = atomic_load_explicit(&g_tagged, memory_order_relaxed);
    if (discarded != NULL) *discarded = atomic_load_explicit(&g_discarded, memory_order_relaxed);
}

#endif // SW_PLATFORM_SAMPLES
