// gzip (zlib) and xz (liblzma) for report exports and MiniDebugInfo, off the hot path.
// Every function allocates its output with malloc; the caller frees it with free().
#ifndef SW_COMPRESSION_H
#define SW_COMPRESSION_H

#include <stddef.h>
#include <stdint.h>

/// Compresses `in` as one gzip member (RFC 1952), what pprof files are. 0 on success.
int sw_gzip(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len);

/// Inflates a gzip or zlib stream (detected from its header); refuses output past `max_out`
/// bytes so a hostile input cannot exhaust memory. 0 on success.
int sw_inflate(const uint8_t *in, size_t in_len, size_t max_out, uint8_t **out, size_t *out_len);

/// Decompresses an .xz stream (the `.gnu_debugdata` section of MiniDebugInfo); refuses output
/// past `max_out` bytes. 0 on success; -1 also where liblzma is not linked (outside Linux).
int sw_xz_decompress(const uint8_t *in, size_t in_len, size_t max_out, uint8_t **out, size_t *out_len);

/// Frees what the functions above returned.
void sw_compression_free(uint8_t *buffer);

#endif
