// Address -> module and dynamic symbol, for symbolization off the hot path (never in a handler).
#ifndef SW_SYMBOLS_H
#define SW_SYMBOLS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What dladdr knows of an address. Strings point into the loader's tables: copy them at once.
typedef struct sw_symbol_info {
    const char *module_path;   ///< NULL when the address is in no module
    uint64_t module_base;
    const char *symbol;        ///< NULL when no dynamic symbol covers the address
    uint64_t symbol_address;
} sw_symbol_info_t;

/// Returns 1 when the address lies in a loaded module. Not async-signal-safe (dladdr locks).
int sw_symbol_lookup(uint64_t address, sw_symbol_info_t *out);

/// The address range [*start, *start + *size) of the exported function `name` in any loaded module.
/// Returns 1 when found with a known size, 0 otherwise. Not async-signal-safe (dlsym, dladdr1 lock).
int sw_symbol_range(const char *name, uint64_t *start, uint64_t *size);

/// The start of the function holding `pc`, from its object's unwind table (.eh_frame_hdr and the
/// FDE covering pc), as the loader mapped it: no file is read and no symbol table loaded, so the
/// watchdog can tell functions apart in a 100 MB binary whose symbols it has not read yet.
/// Returns 1 and sets *start, or 0 when no loaded object or no FDE covers `pc`. Fault-safe reads
/// (an object dlclosed meanwhile ends the lookup); not for handlers (system calls).
int sw_function_start(uint64_t pc, uint64_t *start);

/// The main program's entry point as loaded (AT_ENTRY), 0 when the kernel did not say: an address
/// inside the executable, to find its module without knowing its path.
uint64_t sw_main_entry(void);

/// Where the kernel mapped the vDSO, which has no file to read symbols from; 0 when there is none.
uint64_t sw_vdso_base(void);

#ifdef __cplusplus
}
#endif
#endif
