// libunwind, run outside the signal handler on the registers and stack bytes the handler took.
//
// Why not unw_step in the handler: stock libunwind finds unwind tables through dl_iterate_phdr,
// which takes glibc's loader lock — a handler that lands inside dlopen/dlclose on the same thread
// deadlocks (measured, FACTS.md) — and its caches take locks. Here libunwind runs in the requesting
// thread, and finds tables with _dl_find_object (lock-free, always current after dlclose/dlopen),
// so neither the handler nor the requester ever waits on the loader lock.
#include "sw_internal.h"

#include <dlfcn.h>
#include <libunwind.h>
#include <pthread.h>
#include <string.h>

// Exported by libunwind-x86_64 but not declared in its public headers.
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
                                               unw_proc_info_t *pi, int need_unwind_info, void *arg);

static unw_addr_space_t g_as;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_init_rc;

// DWARF pointer encodings used by .eh_frame_hdr (the only ones linkers emit for it on x86_64).
enum { PE_UDATA4 = 0x03, PE_SDATA4 = 0x0b, PE_PCREL = 0x10, PE_DATAREL = 0x30 };

static int read_word(const sw_stack_view_t *v, uint64_t addr, uint64_t *out) {
    if (v->copy != NULL) {
        if (addr >= v->base && addr + 8 <= v->base + v->len) {
            memcpy(out, v->copy + (addr - v->base), 8);
            return 1;
        }
    } else if (addr >= v->live_lo && addr + 8 <= v->live_hi) {
        memcpy(out, (const void *)(uintptr_t)addr, 8);
        return 1;
    }
    // Anything else libunwind reads is unwind tables inside a loaded module: check it is mapped.
    uint64_t lo, hi;
    if (sw_maps_find(addr, SW_MAP_READ, &lo, &hi) && addr + 8 <= hi) {
        memcpy(out, (const void *)(uintptr_t)addr, 8);
        return 1;
    }
    return 0;
}

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
                              int need_unwind_info, void *arg) {
    struct dl_find_object fo;
    if (_dl_find_object((void *)(uintptr_t)ip, &fo) != 0 || fo.dlfo_eh_frame == NULL) {
        return -UNW_ENOINFO;
    }
    const uint8_t *hdr = (const uint8_t *)fo.dlfo_eh_frame;
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
    di.u.rti.segbase = (unw_word_t)(uintptr_t)hdr;
    di.u.rti.table_data = (unw_word_t)(uintptr_t)(hdr + 12);
    di.u.rti.table_len = (unw_word_t)fde_count * 8 / sizeof(unw_word_t);
    return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
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
    if (write || reg < 0 || reg > UNW_X86_64_RIP) return -UNW_EBADREG;
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

int sw_remote_unwind(const sw_stack_view_t *view, sw_stack_t *out, uint32_t max_frames) {
    if (sw_remote_unwind_init() != 0) return SW_ERR_NOT_INSTALLED;
    if (max_frames > SW_MAX_FRAMES) max_frames = SW_MAX_FRAMES;
    unw_cursor_t cursor;
    out->count = 0;
    out->truncated = 0;
    int rc = unw_init_remote(&cursor, g_as, (void *)view);
    if (rc < 0) {
        out->frames[out->count++] = view->regs->r[UNW_X86_64_RIP];
        out->truncated = 1;
        return 0;
    }
    for (;;) {
        if (out->count >= max_frames) {
            out->truncated = 1;
            break;
        }
        unw_word_t ip = 0;
        if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
        out->frames[out->count++] = ip;
        int step = unw_step(&cursor);
        if (step == 0) break;
        if (step < 0) {
            out->truncated = 1;
            break;
        }
    }
    return 0;
}
