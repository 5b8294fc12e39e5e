// libunwind, run outside the signal handler on the registers and stack bytes the handler took.
//
// Why not unw_step in the handler: stock libunwind finds unwind tables through dl_iterate_phdr,
// which takes glibc's loader lock — a handler that lands inside dlopen/dlclose on the same thread
// deadlocks (seen here under gdb: handler → unw_step → dl_iterate_phdr → lll_lock_wait, on top of the
// same thread's _dl_close_worker) — and its caches take locks. Here libunwind runs in the requesting
// thread, and finds tables with _dl_find_object (lock-free, always current after dlclose/dlopen),
// so neither the handler nor the requester ever waits on the loader lock.
#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_internal.h"

#include <dlfcn.h>
#include <sys/uio.h>
#include <unistd.h>
#include <libunwind.h>
#include <pthread.h>
#include <string.h>

// Exported by every libunwind-<arch> (as _U<arch>_dwarf_search_unwind_table) but not declared in
// its public headers; UNW_OBJ adds the prefix of the architecture being built for.
#define sw_dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)
extern int sw_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
                                        unw_proc_info_t *pi, int need_unwind_info, void *arg);

// sw_regs_t is filled in the handler (sw_arch.h) without libunwind's headers; check here that both
// agree on the numbering.
#if defined(__x86_64__)
_Static_assert(SW_ARCH_UNW_PC == UNW_X86_64_RIP && SW_ARCH_UNW_REGS == UNW_X86_64_RIP + 1,
               "sw_arch.h and libunwind-x86_64 disagree on register numbers");
#elif defined(__aarch64__)
_Static_assert(SW_ARCH_UNW_PC == UNW_AARCH64_PC && SW_ARCH_UNW_REGS == UNW_AARCH64_PSTATE + 1 &&
                   UNW_AARCH64_SP == 31 && UNW_AARCH64_X29 == 29,
               "sw_arch.h and libunwind-aarch64 disagree on register numbers");
#endif

static unw_addr_space_t g_as;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_init_rc;

// DWARF pointer encodings used by .eh_frame_hdr (the only ones GNU ld, gold and lld emit for it).
enum { PE_UDATA4 = 0x03, PE_SDATA4 = 0x0b, PE_PCREL = 0x10, PE_DATAREL = 0x30 };

// Module memory (unwind tables, code) is never read directly: the target keeps running while we
// unwind its copied stack and may dlclose the library whose tables we read (the stress test caught
// exactly that). Pages are copied with process_vm_readv, which fails with EFAULT on an unmapped
// page instead of crashing, into a small cache that lives for one unwind only, so it cannot go
// stale across dlclose/dlopen and takes no loader lock.
#define SW_PAGE 4096u
#define SW_PAGE_SLOTS 32
typedef struct sw_page_cache {
    uint64_t page[SW_PAGE_SLOTS];
    uint32_t len[SW_PAGE_SLOTS];
    uint8_t data[SW_PAGE_SLOTS][SW_PAGE];
    int used, next;
} sw_page_cache_t;

static sw_page_cache_t g_pages;                     // guarded by g_unwind_lock
static pthread_mutex_t g_unwind_lock = PTHREAD_MUTEX_INITIALIZER;

static const uint8_t *cached_page(uint64_t page, uint32_t *len) {
    sw_page_cache_t *c = &g_pages;
    for (int i = 0; i < c->used; i++) {
        if (c->page[i] == page) {
            *len = c->len[i];
            return c->data[i];
        }
    }
    int slot = c->used < SW_PAGE_SLOTS ? c->used++ : (c->next++ % SW_PAGE_SLOTS);
    c->page[slot] = page;
    c->len[slot] = (uint32_t)sw_read_own(c->data[slot], page, SW_PAGE);
    *len = c->len[slot];
    return c->data[slot];
}

// Copies [addr, addr + n) of module memory through the page cache. Returns 1 on success.
static int read_module(uint64_t addr, void *out, size_t n) {
    uint8_t *dst = out;
    while (n > 0) {
        uint64_t page = addr & ~(uint64_t)(SW_PAGE - 1);
        uint32_t off = (uint32_t)(addr - page), len = 0;
        const uint8_t *p = cached_page(page, &len);
        if (off >= len) return 0;
        size_t take = len - off < n ? len - off : n;
        memcpy(dst, p + off, take);
        dst += take;
        addr += take;
        n -= take;
    }
    return 1;
}

static int read_word(const sw_stack_view_t *v, uint64_t addr, uint64_t *out) {
    if (v->copy != NULL) {
        if (addr >= v->base && v->len >= 8 && addr - v->base <= v->len - 8) { // no wrap near 2^64
            memcpy(out, v->copy + (addr - v->base), 8);
            return 1;
        }
    } else if (addr >= v->live_lo && v->live_hi >= 8 && addr <= v->live_hi - 8) {
        // A held thread's live stack, bounded by a map read before it was held: asked of the
        // kernel rather than dereferenced, in case the map went stale.
        return sw_read_own(out, addr, 8) == 8;
    }
    // Anything else libunwind reads is unwind tables or code inside a module.
    return read_module(addr, out, 8);
}

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
                              int need_unwind_info, void *arg) {
    struct dl_find_object fo;
    if (_dl_find_object((void *)(uintptr_t)ip, &fo) != 0 || fo.dlfo_eh_frame == NULL) return -UNW_ENOINFO;
    uint64_t hdr_addr = (uint64_t)(uintptr_t)fo.dlfo_eh_frame;
    uint8_t hdr[12];
    if (!read_module(hdr_addr, hdr, sizeof hdr)) return -UNW_ENOINFO;
    // version 1; eh_frame_ptr (pcrel sdata4); fde_count (udata4); table (datarel sdata4 pairs).
    if (hdr[0] != 1 || hdr[2] != PE_UDATA4 || hdr[3] != (PE_DATAREL | PE_SDATA4)) {
        return -UNW_ENOINFO;
    }
    if ((hdr[1] & 0x0f) != PE_SDATA4 && (hdr[1] & 0x0f) != PE_UDATA4) return -UNW_ENOINFO;
    uint32_t fde_count;
    memcpy(&fde_count, hdr + 8, 4);
    unw_dyn_info_t di;
    memset(&di, 0, sizeof di);
    di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
    di.start_ip = (unw_word_t)(uintptr_t)fo.dlfo_map_start;
    di.end_ip = (unw_word_t)(uintptr_t)fo.dlfo_map_end;
    di.u.rti.segbase = (unw_word_t)hdr_addr;
    di.u.rti.table_data = (unw_word_t)(hdr_addr + 12);
    di.u.rti.table_len = (unw_word_t)fde_count * 8 / sizeof(unw_word_t);
    return sw_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg) {
    (void)as; (void)pi; (void)arg; // libunwind frees the table-format info it allocated itself
}

static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg) {
    (void)as; (void)addr; (void)arg;
    return -UNW_ENOINFO;
}

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg) {
    (void)as;
    if (write) return -UNW_EINVAL;
    uint64_t w;
    if (!read_word((const sw_stack_view_t *)arg, addr, &w)) return -UNW_EINVAL;
    *val = w;
    return 0;
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg) {
    (void)as;
    const sw_stack_view_t *v = arg;
    if (write || reg < 0 || reg >= SW_ARCH_UNW_REGS) return -UNW_EBADREG;
    *val = v->regs->r[reg];
    return 0;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg) {
    (void)as; (void)reg; (void)val; (void)write; (void)arg;
    return -UNW_EBADREG;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg) {
    (void)as; (void)c; (void)arg;
    return -UNW_EINVAL;
}

static int acc_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
                             unw_word_t *off, void *arg) {
    (void)as; (void)addr; (void)buf; (void)len; (void)off; (void)arg;
    return -UNW_ENOINFO; // symbolization happens elsewhere, later
}

static void init_once(void) {
    static unw_accessors_t acc;
    memset(&acc, 0, sizeof acc);
    acc.find_proc_info = acc_find_proc_info;
    acc.put_unwind_info = acc_put_unwind_info;
    acc.get_dyn_info_list_addr = acc_get_dyn_info_list_addr;
    acc.access_mem = acc_access_mem;
    acc.access_reg = acc_access_reg;
    acc.access_fpreg = acc_access_fpreg;
    acc.resume = acc_resume;
    acc.get_proc_name = acc_get_proc_name;
    g_as = unw_create_addr_space(&acc, 0);
    if (g_as == NULL) {
        g_init_rc = -1;
        return;
    }
    // No cache: a cache keyed by IP goes stale when a library is replaced at the same address.
    unw_set_caching_policy(g_as, UNW_CACHE_NONE);
}

int sw_remote_unwind_init(void) {
    pthread_once(&g_once, init_once);
    return g_init_rc;
}

int sw_remote_unwind(const sw_stack_view_t *view, sw_stack_t *out, uint32_t max_frames, int64_t deadline_ns) {
    if (sw_remote_unwind_init() != 0) return SW_ERR_NOT_INSTALLED;
    if (max_frames > SW_MAX_FRAMES) max_frames = SW_MAX_FRAMES;
    unw_cursor_t cursor;
    out->count = 0;
    out->truncated = 0;
    // The unwinder's state is shared: another capture unwinding now makes this one wait, but
    // never past its deadline. Out of time: the PC alone, marked truncated.
    struct timespec until = {.tv_sec = deadline_ns / 1000000000LL, .tv_nsec = deadline_ns % 1000000000LL};
    if (pthread_mutex_clocklock(&g_unwind_lock, CLOCK_MONOTONIC, &until) != 0) {
        out->frames[out->count++] = view->regs->r[SW_ARCH_UNW_PC];
        out->truncated = 1;
        out->stop_reason = SW_STOP_TIMED_OUT;
        return 0;
    }
    g_pages.used = 0;
    g_pages.next = 0;
    int rc = unw_init_remote(&cursor, g_as, (void *)view);
    if (rc < 0) {
        out->frames[out->count++] = view->regs->r[SW_ARCH_UNW_PC];
        out->truncated = 1;
        out->stop_reason = SW_STOP_NO_UNWIND_INFO;
        pthread_mutex_unlock(&g_unwind_lock);
        return 0;
    }
    out->stop_reason = SW_STOP_ROOT;
    for (;;) {
        if (out->count >= max_frames) {
            out->truncated = 1;
            out->stop_reason = SW_STOP_FRAME_LIMIT;
            break;
        }
        if ((out->count & 15) == 15 && sw_now_ns() > deadline_ns) {
            out->truncated = 1;
            out->stop_reason = SW_STOP_TIMED_OUT;
            break;
        }
        unw_word_t ip = 0;
        if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
        out->frames[out->count++] = ip;
        int step = unw_step(&cursor);
        if (step == 0) break;
        if (step < 0) {
            out->truncated = 1;
            // Reads outside the copy, or code without a table entry.
            out->stop_reason = step == -UNW_EINVAL ? SW_STOP_UNREADABLE : SW_STOP_NO_UNWIND_INFO;
            break;
        }
    }
    pthread_mutex_unlock(&g_unwind_lock);
    return 0;
}

#endif // SW_PLATFORM_SAMPLES
