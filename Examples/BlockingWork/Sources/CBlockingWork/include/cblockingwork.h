#ifndef CBLOCKINGWORK_H
#define CBLOCKINGWORK_H
#include <stddef.h>
#include <stdint.h>

// Each call works inside one C library until `ms` milliseconds (CLOCK_MONOTONIC) have passed; the
// pieces are small so the stall ends within a few milliseconds of the request.
int64_t bw_zlib_compress(int ms);
int64_t bw_pbkdf2(int ms);
int64_t bw_sqlite_recursive(int ms);
int64_t bw_regexec(int ms);
int64_t bw_qsort(int ms);

// What the fault-injection matrix needs to match a report to its injection.
int64_t bw_realtime_ns(void);
int64_t bw_monotonic_ns(void);
int32_t bw_gettid(void);
void bw_thread_name(char *buffer, size_t size);

#endif
