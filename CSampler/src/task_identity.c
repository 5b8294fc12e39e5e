// Which Swift task the interrupted thread runs: its id (what `swift_task_getJobTaskId` reports,
// the number a debugger shows) and its current priority, read by the handler on the thread it
// interrupted and only for a stack that runs a task job (the walk met the job runner). The task
// is running there, so it is alive while it is read; nothing read is dereferenced later.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_internal.h"

// The concurrency runtime's exported getters (libswift_Concurrency, swiftcall). async-signal-safe
// in practice, checked on the runtime this package builds with (Swift 6.3, disassembled):
// swift_task_getCurrent reads the runtime's thread-local (__tls_get_addr on a library loaded at
// start-up, already touched by the runner on a thread running a task: no allocation), and
// swift_task_getJobTaskId and swift_task_currentPriority load fields of the task (the priority
// with a 16-byte atomic compare-exchange that writes back what it read). No lock, no system call.
// Weak: CSampler's C-only builds link no Swift runtime, and then no task is named.
extern void *swift_task_getCurrent(void) SW_SWIFTCALL __attribute__((weak));
extern uint64_t swift_task_getJobTaskId(void *job) SW_SWIFTCALL __attribute__((weak));
extern uint64_t swift_task_currentPriority(void *task) SW_SWIFTCALL __attribute__((weak));

// Not for handlers: calls each getter once, so that the dynamic linker binds their PLT slots here,
// not lazily inside a handler (sw_async_learn calls it from the probe task).
void sw_task_identity_prime(void) {
    if (swift_task_getCurrent == NULL || swift_task_getJobTaskId == NULL || swift_task_currentPriority == NULL) return;
    void *task = swift_task_getCurrent();
    if (task != NULL) {
        (void)swift_task_getJobTaskId(task);
        (void)swift_task_currentPriority(task);
    }
}

void sw_task_identity_read(sw_stack_t *st) {
    st->task_id = 0;
    st->task_priority = 0;
    if (swift_task_getCurrent == NULL || swift_task_getJobTaskId == NULL || swift_task_currentPriority == NULL) return;
    void *task = swift_task_getCurrent();
    if (task == NULL) return;
    st->task_id = swift_task_getJobTaskId(task);
    st->task_priority = (uint8_t)swift_task_currentPriority(task);
}

#endif // SW_PLATFORM_SAMPLES
