// Which request the interrupted thread serves: the value of one Swift task-local (a request tag,
// a plain integer Stallwatch's StallAttribution sets around a request), read by the handler on the
// thread it interrupted. The tag is only an integer: the watchdog maps it back to the request's
// facts through its own registry, so nothing read here is ever dereferenced later.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_internal.h"

#include <stdatomic.h>

// The Swift concurrency runtime's task-local lookup (libswift_Concurrency, exported ABI, swiftcall).
// async-signal-safe in practice, checked on the runtime this package builds with (Swift 6.3,
// disassembled): it reads the current task from the runtime's thread-local (__tls_get_addr on a
// library loaded at start-up, so static TLS: no allocation, no lock) and walks that task's
// task-local list comparing keys; with no task it walks the thread's fallback list the same way.
// No allocation, no lock, no system call. The list belongs to the interrupted task, which cannot
// pop an entry while it is interrupted.
// Weak: CSampler's C-only builds (scripts/cross-arch.sh) link no Swift runtime, and then no tag is
// read (SW_SWIFTCALL: sw_internal.h).
extern void *swift_task_localValueGet(const void *key) SW_SWIFTCALL __attribute__((weak));

static _Atomic(const void *) g_request_key;

// Not for handlers: one lookup of a key no task-local uses (it finds nothing), so that the dynamic
// linker binds the call's PLT slot here, not lazily inside a handler.
void sw_request_tag_prime(void) {
    if (swift_task_localValueGet != NULL) (void)swift_task_localValueGet(&g_request_key);
}

void sw_request_key_set(const void *key) {
    sw_request_tag_prime();
    atomic_store_explicit(&g_request_key, key, memory_order_release);
}

const void *sw_request_key(void) { return atomic_load_explicit(&g_request_key, memory_order_acquire); }

// async-signal-safe: one atomic load and the runtime's lookup above; 0 when no key is set, or the
// interrupted code runs outside any request.
uint64_t sw_request_tag_read(void) {
    const void *key = atomic_load_explicit(&g_request_key, memory_order_acquire);
    if (key == NULL || swift_task_localValueGet == NULL) return 0;
    const uint64_t *value = swift_task_localValueGet(key);
    return value == NULL ? 0 : *value;
}

#endif // SW_PLATFORM_SAMPLES
