// Unwind tables (.eh_frame) read in the signal handler: where code built without frame pointers
// (Debian's libc, libcrypto, libz, libsqlite3) keeps its return address and the caller's frame
// pointer. Internal to CSampler.
#ifndef SW_UNWIND_TABLE_H
#define SW_UNWIND_TABLE_H

#include <stdint.h>

// Register numbers in DWARF's numbering for this architecture (the ABI's, as .eh_frame uses them).
#if defined(__x86_64__)
#define SW_DWARF_SP 7
#define SW_DWARF_FP 6
#define SW_DWARF_RA 16
#elif defined(__aarch64__)
#define SW_DWARF_SP 31
#define SW_DWARF_FP 29
#define SW_DWARF_RA 30
#endif

/// How a register of the caller is recovered (the subset of DWARF rules a walk needs).
enum {
    SW_RULE_SAME = 0,       ///< unchanged by this frame
    SW_RULE_UNDEFINED = 1,  ///< no value: for the return address, the outermost frame
    SW_RULE_AT_CFA = 2,     ///< saved at CFA + offset
    SW_RULE_IS_CFA = 3,     ///< the value is CFA + offset
    SW_RULE_UNSUPPORTED = 4 ///< an expression or another register: not followed
};

/// The unwind rule that holds at one PC.
typedef struct sw_cfi_row {
    uint8_t cfa_reg;        ///< SW_DWARF_SP or SW_DWARF_FP (anything else: SW_CFI_UNSUPPORTED)
    uint8_t fp_rule, ra_rule;
    int64_t cfa_off, fp_off, ra_off;
} sw_cfi_row_t;

/// Results of sw_cfi_find_row.
enum {
    SW_CFI_OK = 0,
    SW_CFI_NO_MODULE = 1,      ///< the address is in no loaded object
    SW_CFI_NO_INFO = 2,        ///< the object has no .eh_frame_hdr, or no FDE covers the address
    SW_CFI_UNSUPPORTED = 3,    ///< the rule uses an expression, another CFA register, or is malformed
};

/// The object _dl_find_object named for an earlier PC of the same walk: [start, end) and its
/// .eh_frame_hdr (0: none). Consecutive table frames are mostly in one object (libc's), and the
/// object cannot go away under a thread that is interrupted inside it.
typedef struct sw_cfi_object {
    uint64_t start, end, hdr;
} sw_cfi_object_t;

/// The row of the unwind table that applies at `pc`. `pc` is the interrupted PC of frame 0, or a
/// return address minus one for outer frames (so a call at the end of a function finds its own FDE).
/// Finds the object with _dl_find_object (lock-free, current after dlclose: never the loader lock)
/// and reads its .eh_frame_hdr search table and .eh_frame in place. Bounded: at most SW_CFI_MAX_OPS
/// instructions interpreted. `last` (may be NULL; start it zeroed) carries the object between the
/// calls of one walk: a PC inside it is not looked up again. Rows found are kept in a small cache
/// keyed by PC and object (see unwind_table.c). async-signal-safe, and no system call (handlers).
int sw_cfi_find_row(uint64_t pc, sw_cfi_row_t *row, sw_cfi_object_t *last);

/// The row cache alone, for `pc` in the object `obj` (its start) whose .eh_frame_hdr is at `hdr`:
/// 1 with *rc (and *row when SW_CFI_OK) when sw_cfi_find_row has kept that row, 0 otherwise. Only
/// compares the two words with the cache's keys, never reads the object: a stale pair just misses.
/// async-signal-safe, no system call.
int sw_cfi_cached_row(uint64_t pc, uint64_t obj, uint64_t hdr, sw_cfi_row_t *row, int *rc);

/// Asks for the row cache's line for `pc` ahead of its lookup (a hint: no effect on results).
/// async-signal-safe.
void sw_cfi_row_prefetch(uint64_t pc);

/// Makes sw_cfi_find_row's row cache resident (outside handlers: it writes every page once).
void sw_cfi_row_cache_touch(void);

/// The same through fault-safe copies (process_vm_readv): for walks off the sampled thread, which
/// may have dlclosed the object since. async-signal-safe (system calls).
int sw_cfi_find_row_guarded(uint64_t pc, sw_cfi_row_t *row);

/// Most CFA instructions interpreted for one row: a bound on the handler's time.
#define SW_CFI_MAX_OPS 512

/// Share of sampled FDEs whose CFA is the frame pointer, in per mille, for the object whose
/// .eh_frame_hdr is at `hdr` (outside handlers: classifying a module). -1 when unreadable.
int sw_cfi_fp_share(uint64_t hdr, uint32_t sample);

// ---- modules (unwind_modules.c) ----------------------------------------------------------------

/// Rebuilds the table of loaded objects and whether each keeps frame pointers. Takes the loader
/// lock (dl_iterate_phdr): never from a handler, never while threads are parked.
int sw_modules_rebuild(void);

/// 1 when the code at `pc` belongs to an object that keeps frame pointers, 0 when it does not or
/// is not in the table (then the unwind table is used: slower, still right). async-signal-safe.
int sw_module_keeps_fp(uint64_t pc);

/// 1 when the object holding `pc` keeps frame pointers, 0 when not, -1 when not in the table;
/// for 0 and 1 also the executable segment's range, over which the answer holds. async-signal-safe.
int sw_module_lookup(uint64_t pc, uint64_t *lo, uint64_t *hi);

/// Walks that met code in no known module since start (a rebuild is due). async-signal-safe.
uint64_t sw_modules_unknown_count(void);

#endif
