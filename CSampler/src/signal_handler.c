// The sampling signal's handler: one small dispatcher. Request answers go to request_slots.c,
// timer ticks to ring.c, everything else to the handler that was installed before ours
// (signal_owner.c, which installs this one and knows nothing of what it calls).
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_internal.h"

#include <errno.h>
#include <signal.h>

// async-signal-safe: the signal handler itself. errno is saved and restored.
void sw_signal_handler(int sig, siginfo_t *si, void *uc) {
    int saved_errno = errno;
    if (si != NULL && si->si_code == SI_QUEUE && si->si_pid == sw_signal_owner_pid()) {
        uint64_t cookie = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
        if ((cookie >> 48) == SW_COOKIE_MAGIC) {
            sw_capture_answer(cookie, uc);
            errno = saved_errno;
            return;
        }
    } else if (si != NULL && si->si_code == SI_TIMER) {
        uint64_t cookie = (uint64_t)(uintptr_t)si->si_value.sival_ptr;
        if ((cookie >> 48) == SW_RING_COOKIE_MAGIC) {
            sw_ring_on_signal(cookie, uc);
            errno = saved_errno;
            return;
        }
    }
    sw_signal_chain(sig, si, uc);
    errno = saved_errno;
}

// Everything that allocates or locks on first use, primed outside any handler.
static int prime(void) {
    int rc = sw_maps_rebuild();
    if (rc == 0) rc = sw_remote_unwind_init() == 0 ? 0 : SW_ERR_NOT_INSTALLED;
    (void)sw_now_ns();
    sw_request_tag_prime();
    return rc;
}

int sw_sampler_install(int signo, int allow_chain) {
    return sw_signal_own(signo, allow_chain, sw_signal_handler, prime);
}

int sw_sampler_handler_state(void) {
    return sw_signal_state(sw_signal_handler);
}

int sw_sampler_reclaim(void) {
    return sw_signal_reclaim(sw_signal_handler);
}

#endif // SW_PLATFORM_SAMPLES
