#include "sw_platform.h"
#if SW_PLATFORM_SAMPLES
#include "sw_symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>

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

int sw_symbol_range(const char *name, uint64_t *start, uint64_t *size) {
    *start = 0;
    *size = 0;
    void *address = dlsym(RTLD_DEFAULT, name);
    if (address == NULL) return 0;
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (dladdr1(address, &info, (void **)&sym, RTLD_DL_SYMENT) == 0 || sym == NULL || sym->st_size == 0) return 0;
    *start = (uint64_t)(uintptr_t)address;
    *size = (uint64_t)sym->st_size;
    return 1;
}

uint64_t sw_main_entry(void) {
    return (uint64_t)getauxval(AT_ENTRY);
}

uint64_t sw_vdso_base(void) {
    return (uint64_t)getauxval(AT_SYSINFO_EHDR);
}

#endif // SW_PLATFORM_SAMPLES
