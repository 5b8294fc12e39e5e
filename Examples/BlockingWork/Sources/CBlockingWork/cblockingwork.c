#define _GNU_SOURCE
#include "cblockingwork.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <regex.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static int64_t now_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t bw_realtime_ns(void) { return now_ns(CLOCK_REALTIME); }
int64_t bw_monotonic_ns(void) { return now_ns(CLOCK_MONOTONIC); }
int32_t bw_gettid(void) { return (int32_t)syscall(SYS_gettid); }

void bw_thread_name(char *buffer, size_t size) {
    if (size == 0) return;
    if (pthread_getname_np(pthread_self(), buffer, size) != 0) buffer[0] = '\0';
}

static int64_t deadline_after(int ms) { return bw_monotonic_ns() + (int64_t)ms * 1000000; }

int64_t bw_zlib_compress(int ms) {
    enum { input_size = 64 * 1024 };
    static unsigned char input[input_size];
    unsigned char *output = malloc(compressBound(input_size));
    if (output == NULL) return -1;
    uint32_t x = 12345;
    for (size_t i = 0; i < input_size; i++) {   // half-compressible, so level 9 works hard
        x = x * 1103515245u + 12345u;
        input[i] = (unsigned char)((x >> 16) & 0x0f);
    }
    int64_t rounds = 0, end = deadline_after(ms);
    while (bw_monotonic_ns() < end) {
        uLongf length = compressBound(input_size);
        if (compress2(output, &length, input, input_size, 9) != Z_OK) break;
        rounds++;
    }
    free(output);
    return rounds;
}

int64_t bw_pbkdf2(int ms) {
    static const char password[] = "correct horse battery staple";
    static const unsigned char salt[] = "stallwatch-salt";
    unsigned char key[32];
    int64_t rounds = 0, end = deadline_after(ms);
    while (bw_monotonic_ns() < end) {
        if (PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, (int)sizeof salt - 1, 2000,
                              EVP_sha256(), (int)sizeof key, key) != 1) break;
        rounds++;
    }
    return rounds;
}

int64_t bw_sqlite_recursive(int ms) {
    sqlite3 *db = NULL;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) { sqlite3_close(db); return -1; }
    sqlite3_stmt *statement = NULL;
    const char *sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 20000) "
                      "SELECT sum(x) FROM c";
    int64_t rounds = 0, end = deadline_after(ms);
    if (sqlite3_prepare_v2(db, sql, -1, &statement, NULL) == SQLITE_OK) {
        while (bw_monotonic_ns() < end) {
            while (sqlite3_step(statement) == SQLITE_ROW) {}
            sqlite3_reset(statement);
            rounds++;
        }
    }
    sqlite3_finalize(statement);
    sqlite3_close(db);
    return rounds;
}

int64_t bw_regexec(int ms) {
    regex_t regex;
    if (regcomp(&regex, "([a-z]+[0-9]*)+!", REG_EXTENDED) != 0) return -1;
    char text[4096];
    for (size_t i = 0; i < sizeof text - 1; i++) text[i] = (char)('a' + i % 26);
    text[sizeof text - 1] = '\0';
    int64_t rounds = 0, end = deadline_after(ms);
    while (bw_monotonic_ns() < end) {
        regmatch_t match[2];
        (void)regexec(&regex, text, 2, match, 0);
        rounds++;
    }
    regfree(&regex);
    return rounds;
}

static int compare_ints(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int64_t bw_qsort(int ms) {
    enum { count = 20000 };
    int *values = malloc(count * sizeof *values);
    if (values == NULL) return -1;
    uint32_t x = 777;
    int64_t rounds = 0, end = deadline_after(ms);
    while (bw_monotonic_ns() < end) {
        for (size_t i = 0; i < count; i++) {
            x = x * 1664525u + 1013904223u;
            values[i] = (int)(x >> 1);
        }
        qsort(values, count, sizeof *values, compare_ints);
        rounds++;
    }
    free(values);
    return rounds;
}
