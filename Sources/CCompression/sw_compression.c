#include "sw_compression.h"

#include <limits.h>
#include <stdlib.h>
#include <zlib.h>

// liblzma is a Linux system library here (MiniDebugInfo, what it is for, is an ELF section); the
// macOS SDK has no <lzma.h>, so elsewhere, and in the portable build that stands in for elsewhere,
// xz streams are refused like damaged ones. zlib ships with every platform's SDK.
#if defined(__linux__) && !defined(STALLWATCH_PORTABLE_ONLY)
#define SW_HAVE_LZMA 1
#include <lzma.h>
#else
#define SW_HAVE_LZMA 0
#endif

// Grows `*buffer` to at least `needed` bytes (doubling), never past `max`. 0 on success.
static int grow(uint8_t **buffer, size_t *capacity, size_t needed, size_t max) {
    if (needed <= *capacity) return 0;
    if (needed > max) return -1;
    size_t next = *capacity < 4096 ? 4096 : *capacity;
    while (next < needed) next = next > max / 2 ? max : next * 2;
    if (next > max) next = max;
    uint8_t *bigger = realloc(*buffer, next);
    if (bigger == NULL) return -1;
    *buffer = bigger;
    *capacity = next;
    return 0;
}

int sw_gzip(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len) {
    if (in_len > UINT_MAX) return -1; // one deflate call takes a uInt length
    z_stream z = {0};
    // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -1;
    uLong bound = deflateBound(&z, (uLong)in_len) + 32;
    uint8_t *buffer = malloc(bound);
    if (buffer == NULL) {
        deflateEnd(&z);
        return -1;
    }
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)in_len;
    z.next_out = buffer;
    z.avail_out = (uInt)bound;
    int status = deflate(&z, Z_FINISH);
    size_t produced = z.total_out;
    deflateEnd(&z);
    if (status != Z_STREAM_END) {
        free(buffer);
        return -1;
    }
    *out = buffer;
    *out_len = produced;
    return 0;
}

int sw_inflate(const uint8_t *in, size_t in_len, size_t max_out, uint8_t **out, size_t *out_len) {
    if (in_len > UINT_MAX) return -1;
    z_stream z = {0};
    // windowBits 15 + 32: accept either header.
    if (inflateInit2(&z, 15 + 32) != Z_OK) return -1;
    uint8_t *buffer = NULL;
    size_t capacity = 0;
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)in_len;
    int status = Z_OK;
    while (status == Z_OK) {
        if (grow(&buffer, &capacity, z.total_out + 1, max_out) != 0) break;
        size_t room = capacity - z.total_out;
        z.next_out = buffer + z.total_out;
        z.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
        status = inflate(&z, Z_NO_FLUSH);
        if (status == Z_BUF_ERROR && z.avail_in == 0) break; // truncated input
    }
    size_t produced = z.total_out;
    inflateEnd(&z);
    if (status != Z_STREAM_END) {
        free(buffer);
        return -1;
    }
    *out = buffer;
    *out_len = produced;
    return 0;
}

#if SW_HAVE_LZMA
int sw_xz_decompress(const uint8_t *in, size_t in_len, size_t max_out, uint8_t **out, size_t *out_len) {
    lzma_stream s = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&s, 256u << 20, 0) != LZMA_OK) return -1;
    uint8_t *buffer = NULL;
    size_t capacity = 0;
    s.next_in = in;
    s.avail_in = in_len;
    lzma_ret status = LZMA_OK;
    while (status == LZMA_OK) {
        if (grow(&buffer, &capacity, (size_t)s.total_out + 1, max_out) != 0) break;
        s.next_out = buffer + s.total_out;
        s.avail_out = capacity - (size_t)s.total_out;
        status = lzma_code(&s, s.avail_in == 0 ? LZMA_FINISH : LZMA_RUN);
    }
    size_t produced = (size_t)s.total_out;
    lzma_end(&s);
    if (status != LZMA_STREAM_END) {
        free(buffer);
        return -1;
    }
    *out = buffer;
    *out_len = produced;
    return 0;
}
#else
int sw_xz_decompress(const uint8_t *in, size_t in_len, size_t max_out, uint8_t **out, size_t *out_len) {
    (void)in;
    (void)in_len;
    (void)max_out;
    (void)out;
    (void)out_len;
    return -1;
}
#endif

void sw_compression_free(uint8_t *buffer) { free(buffer); }
