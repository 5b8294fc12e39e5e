// Reads a waiter's lock word and its neighbours (see sw_lock_word.h). Called from the watchdog
// thread only.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_lock_word.h"

#include <string.h>

#include "sw_internal.h"

uint32_t sw_lock_words_read(uint64_t addr, sw_lock_words_t *out) {
    memset(out, 0, sizeof *out);
    if (addr == 0 || (addr & 3u) != 0) return 0;
    const size_t all = sizeof out->words;
    size_t got = sw_read_own(out->words, addr, all);
    if (got == all) {
        out->bytes = (uint32_t)all;
        return out->bytes;
    }
    // A short read: the mapping ends inside the range (a futex word that is not a mutex, at the end
    // of its page). The word alone still says something.
    memset(out->words, 0, sizeof out->words);
    if (sw_read_own(out->words, addr, sizeof out->words[0]) == sizeof out->words[0]) out->bytes = sizeof out->words[0];
    return out->bytes;
}

#endif // SW_PLATFORM_SAMPLES
