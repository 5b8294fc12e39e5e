#include "sw_symbols.h"

#include <dlfcn.h>
#include <string.h>

int sw_symbol_lookup(uint64_t address, sw_symbol_info_t *out) {
    memset(out, 0, sizeof *out);
    Dl_info info;
    if (dladdr((void *)(uintptr_t)address, &info) == 0) return 0;
    out->module_path = info.dli_fname;
    out->module_base = (uint64_t)(uintptr_t)info.dli_fbase;
    out->symbol = info.dli_sname;
    out->symbol_address = (uint64_t)(uintptr_t)info.dli_saddr;
    return 1;
}
