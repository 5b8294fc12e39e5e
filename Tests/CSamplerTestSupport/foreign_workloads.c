#define _GNU_SOURCE
#include "sw_foreign_workloads.h"

#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <sqlite3.h>
#include <zlib.h>

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/// Keeps the compiler from dropping work whose result it can see is unused.
static void keep(const void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

__attribute__((noinline)) int64_t sw_foreign_pbkdf2(unsigned ms) {
    static const char password[] = "correct horse battery staple";
    static const unsigned char salt[] = "stallwatch-salt";
    unsigned char out[32];
    int64_t sum = 0;
    const int64_t end = now_ms() + ms;
    do {
        // ~20-40 ms a round here: the thread spends nearly all its time inside libcrypto.
        if (PKCS5_PBKDF2_HMAC(password, (int)sizeof password - 1, salt, (int)sizeof salt - 1, 20000, EVP_sha256(),
                              (int)sizeof out, out) != 1) {
            return -1;
        }
        for (size_t i = 0; i < sizeof out; i++) sum += out[i];
    } while (now_ms() < end);
    return sum;
}

struct deadline {
    int64_t end;
};

static int sqlite_stop_at_deadline(void *arg) {
    const struct deadline *d = arg;
    return now_ms() >= d->end; // nonzero interrupts the statement
}

__attribute__((noinline)) int64_t sw_foreign_sqlite_cte(unsigned ms) {
    sqlite3 *db = NULL;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK) {
        sqlite3_close(db);
        return -1;
    }
    struct deadline d = {.end = now_ms() + ms};
    sqlite3_progress_handler(db, 100000, sqlite_stop_at_deadline, &d);
    sqlite3_stmt *st = NULL;
    // Counts far beyond what `ms` allows, in one sqlite3_step; the progress handler ends it at the
    // deadline (SQLITE_INTERRUPT).
    const char *sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000000000) "
                      "SELECT count(*) FROM c";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return -1;
    }
    int64_t sum = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) sum += sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc == SQLITE_INTERRUPT || rc == SQLITE_DONE ? sum : -1;
}

__attribute__((noinline)) int64_t sw_foreign_regexec(unsigned ms) {
    regex_t re;
    // Back-references send glibc's matcher down its backtracking path (check_subexp_matching_top,
    // sift_states_backward, ...): tens of milliseconds per call on 30 characters that never match.
    if (regcomp(&re, "(.*)(.*)(.*)\\3\\2\\1b", REG_EXTENDED) != 0) return -1;
    char subject[32];
    memset(subject, 'a', 30);
    subject[30] = '!';
    subject[31] = 0;
    int64_t calls = 0;
    const int64_t end = now_ms() + ms;
    do {
        keep(subject);
        if (regexec(&re, subject, 0, NULL, 0) == 0) calls += 1000000; // never: no 'b'
        calls++;
    } while (now_ms() < end);
    regfree(&re);
    return calls;
}

__attribute__((noinline)) int64_t sw_foreign_compress(unsigned ms) {
    const size_t size = 1u << 20;
    unsigned char *in = malloc(size);
    uLongf bound = compressBound(size);
    unsigned char *out = malloc(bound);
    if (in == NULL || out == NULL) {
        free(in);
        free(out);
        return -1;
    }
    uint32_t x = 12345;
    for (size_t i = 0; i < size; i++) {
        x = x * 1103515245u + 12345u;
        in[i] = (unsigned char)("stallwatch "[(x >> 16) % 11] ^ ((x >> 28) & 1)); // compressible, not trivially
    }
    int64_t total = 0;
    const int64_t end = now_ms() + ms;
    do {
        uLongf len = bound;
        if (compress2(out, &len, in, size, 9) != Z_OK) {
            total = -1;
            break;
        }
        total += (int64_t)len;
    } while (now_ms() < end);
    free(in);
    free(out);
    return total;
}

__attribute__((noinline)) static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

__attribute__((noinline)) int64_t sw_foreign_qsort(unsigned ms) {
    const size_t n = 200000;
    uint32_t *v = malloc(n * sizeof *v);
    if (v == NULL) return -1;
    uint32_t x = 2463534242u;
    int64_t sum = 0;
    const int64_t end = now_ms() + ms;
    do {
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            v[i] = x;
        }
        qsort(v, n, sizeof *v, cmp_u32);
        sum += v[0];
    } while (now_ms() < end);
    free(v);
    return sum;
}

__attribute__((noinline)) int64_t sw_foreign_gzread(int fd) {
    int own = dup(fd);
    if (own < 0) return -1;
    gzFile gz = gzdopen(own, "rb");
    if (gz == NULL) {
        close(own);
        return -1;
    }
    char buf[4096];
    int got = gzread(gz, buf, sizeof buf); // blocks in read() on the pipe
    keep(buf);
    gzclose(gz);
    return got;
}

__attribute__((noinline)) int64_t sw_foreign_sqlite_busy(const char *path, unsigned ms) {
    sqlite3 *holder = NULL, *waiter = NULL;
    int64_t result = -1;
    if (sqlite3_open(path, &holder) != SQLITE_OK || sqlite3_open(path, &waiter) != SQLITE_OK) goto done;
    if (sqlite3_exec(holder, "CREATE TABLE IF NOT EXISTS t(x); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1)", NULL, NULL,
                     NULL) != SQLITE_OK) {
        goto done;
    }
    sqlite3_busy_timeout(waiter, (int)ms);
    // SQLite's busy handler sleeps in steps (sqliteDefaultBusyCallback -> unixSleep -> usleep)
    // until `ms` have passed, then gives up with SQLITE_BUSY.
    result = sqlite3_exec(waiter, "INSERT INTO t VALUES (2)", NULL, NULL, NULL);
    sqlite3_exec(holder, "ROLLBACK", NULL, NULL, NULL);
done:
    sqlite3_close(waiter);
    sqlite3_close(holder);
    return result;
}

// Called through a volatile pointer so that malloc + memset + free is not folded away.
static void *(*volatile fill)(void *, int, size_t) = memset;

__attribute__((noinline)) int64_t sw_foreign_malloc_free(unsigned chunk_mib, unsigned ms) {
    const size_t size = (size_t)chunk_mib << 20;
    int64_t rounds = 0;
    const int64_t end = now_ms() + ms;
    do {
        unsigned char *p = malloc(size); // above the mmap threshold: its own mapping
        if (p == NULL) return -1;
        fill(p, (int)(rounds & 0x7f) + 1, size);
        keep(p);
        free(p); // munmap of the whole buffer
        rounds++;
    } while (now_ms() < end);
    return rounds;
}

// ---- A function no unwinder can get out of ----
//
// Assembly without CFI directives: the object gets no .eh_frame entry for it. It pushes the
// caller's frame pointer like any function (so it can restore it), then sets the frame-pointer
// register to a small odd number and spins until *flag is nonzero.
#if defined(__x86_64__)
__asm__(".pushsection .text\n"
        ".globl sw_foreign_spin_no_unwind_info\n"
        ".type sw_foreign_spin_no_unwind_info, @function\n"
        "sw_foreign_spin_no_unwind_info:\n"
        "  pushq %rbp\n"
        "  movq $0x2b, %rbp\n"
        "1:\n"
        "  pause\n"
        "  movl (%rdi), %eax\n"
        "  testl %eax, %eax\n"
        "  jz 1b\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size sw_foreign_spin_no_unwind_info, .-sw_foreign_spin_no_unwind_info\n"
        ".popsection\n");
#define SW_HAVE_NO_UNWIND_SPIN 1
#elif defined(__aarch64__)
__asm__(".pushsection .text\n"
        ".globl sw_foreign_spin_no_unwind_info\n"
        ".type sw_foreign_spin_no_unwind_info, %function\n"
        "sw_foreign_spin_no_unwind_info:\n"
        "  stp x29, x30, [sp, #-16]!\n"
        "  mov x29, #0x2b\n"
        "1:\n"
        "  ldr w9, [x0]\n"
        "  cbz w9, 1b\n"
        "  ldp x29, x30, [sp], #16\n"
        "  ret\n"
        ".size sw_foreign_spin_no_unwind_info, .-sw_foreign_spin_no_unwind_info\n"
        ".popsection\n");
#define SW_HAVE_NO_UNWIND_SPIN 1
#endif

#ifdef SW_HAVE_NO_UNWIND_SPIN
void sw_foreign_spin_no_unwind_info(volatile int *flag);

struct release_after {
    volatile int flag;
    unsigned ms;
};

static void *release_later(void *arg) {
    struct release_after *r = arg;
    struct timespec ts = {.tv_sec = r->ms / 1000, .tv_nsec = (long)(r->ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    __atomic_store_n(&r->flag, 1, __ATOMIC_RELEASE);
    return NULL;
}
#endif

// ---- A frameless leaf without unwind rows (a PLT stub's shape) ----
#if defined(__x86_64__)
__asm__(".pushsection .text\n"
        ".globl sw_foreign_spin_rowless_leaf\n"
        ".type sw_foreign_spin_rowless_leaf, @function\n"
        "sw_foreign_spin_rowless_leaf:\n"
        "1:\n"
        "  pause\n"
        "  movl (%rdi), %eax\n"
        "  testl %eax, %eax\n"
        "  jz 1b\n"
        "  ret\n"
        ".size sw_foreign_spin_rowless_leaf, .-sw_foreign_spin_rowless_leaf\n"
        ".popsection\n");
#elif defined(__aarch64__)
__asm__(".pushsection .text\n"
        ".globl sw_foreign_spin_rowless_leaf\n"
        ".type sw_foreign_spin_rowless_leaf, %function\n"
        "sw_foreign_spin_rowless_leaf:\n"
        "1:\n"
        "  ldr w9, [x0]\n"
        "  cbz w9, 1b\n"
        "  ret\n"
        ".size sw_foreign_spin_rowless_leaf, .-sw_foreign_spin_rowless_leaf\n"
        ".popsection\n");
#endif

#ifdef SW_HAVE_NO_UNWIND_SPIN
void sw_foreign_spin_rowless_leaf(volatile int *flag);
#endif

__attribute__((noinline)) int sw_foreign_rowless_leaf_spin(unsigned ms) {
#ifdef SW_HAVE_NO_UNWIND_SPIN
    struct release_after r = {.flag = 0, .ms = ms};
    pthread_t helper;
    int rc = pthread_create(&helper, NULL, release_later, &r);
    if (rc != 0) return -rc;
    sw_foreign_spin_rowless_leaf(&r.flag);
    pthread_join(helper, NULL);
    return 0;
#else
    (void)ms;
    return -ENOSYS;
#endif
}

__attribute__((noinline)) int sw_foreign_unwalkable_spin(unsigned ms) {
#ifdef SW_HAVE_NO_UNWIND_SPIN
    struct release_after r = {.flag = 0, .ms = ms};
    pthread_t helper;
    int rc = pthread_create(&helper, NULL, release_later, &r);
    if (rc != 0) return -rc;
    sw_foreign_spin_no_unwind_info(&r.flag);
    pthread_join(helper, NULL);
    return 0;
#else
    (void)ms;
    return -ENOSYS;
#endif
}
