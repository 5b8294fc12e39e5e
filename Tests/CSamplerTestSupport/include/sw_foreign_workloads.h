// Workloads that spend their time inside Debian's libraries built without frame pointers
// (libcrypto, libsqlite3, libz, glibc's qsort/regexec/free), for the tests that a stall there is
// reported once and blamed on the Swift function that called in. Each is noinline and takes its
// duration, so a test chooses how long the stall lasts.
#ifndef SW_FOREIGN_WORKLOADS_H
#define SW_FOREIGN_WORKLOADS_H

#include <stdint.h>

/// OpenSSL PKCS5_PBKDF2_HMAC (SHA-256) in rounds until `ms` have passed. Returns a digest byte sum
/// (so the work is not elided), or -1 when a call fails.
int64_t sw_foreign_pbkdf2(unsigned ms);

/// An in-memory SQLite database runs a recursive CTE counting up, stopped by a progress handler
/// after `ms`. Returns the rows summed so far (>= 0), or -1 when SQLite fails.
int64_t sw_foreign_sqlite_cte(unsigned ms);

/// glibc regexec with a back-reference pattern that backtracks on a non-matching subject, in
/// rounds until `ms` have passed. Returns the number of regexec calls, or -1 when regcomp fails.
int64_t sw_foreign_regexec(unsigned ms);

/// zlib compress2 (level 9) of a 1 MiB buffer, in rounds until `ms` have passed. Returns the
/// compressed bytes summed, or -1 on an error.
int64_t sw_foreign_compress(unsigned ms);

/// glibc qsort of 200 000 pseudo-random uint32 values with a C comparator, in rounds until `ms`
/// have passed. Returns the sum of the first element of each sorted round, or -1.
int64_t sw_foreign_qsort(unsigned ms);

/// Reads through zlib (gzdopen + gzread) from `fd`, a pipe nobody writes to yet: blocks in read()
/// until the writer writes or closes. Returns gzread's result.
int64_t sw_foreign_gzread(int fd);

/// Opens a SQLite database file `path` twice: the first connection holds an exclusive lock, the
/// second tries to write with busy_timeout `ms`, so SQLite's busy handler sleeps for `ms` before
/// giving up. Returns the second connection's result code (SQLITE_BUSY = 5 expected), or -1.
int64_t sw_foreign_sqlite_busy(const char *path, unsigned ms);

/// Allocates `chunk_mib` MiB with malloc (served by mmap), fills it with memset and frees it
/// (munmap), in rounds until `ms` have passed. Returns the rounds made.
int64_t sw_foreign_malloc_free(unsigned chunk_mib, unsigned ms);

/// Spins for `ms` inside a function that has no unwind information (no .eh_frame entry: it is
/// assembly without CFI) and that has set its frame pointer to garbage (a small odd number): no
/// unwinder can walk from there to the caller. A helper thread ends the spin. Returns 0, or -errno
/// when the helper cannot start; -ENOSYS on an architecture without the assembly.
int sw_foreign_unwalkable_spin(unsigned ms);

/// Spins for `ms` in a frameless leaf with no unwind rows — the shape of a PLT stub: its caller's
/// return address at SP (x86_64) or in LR (arm64), FP still the caller's record. -ENOSYS on other
/// architectures.
int sw_foreign_rowless_leaf_spin(unsigned ms);

#endif
