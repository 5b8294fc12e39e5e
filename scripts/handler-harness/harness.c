// The timer ring's capture (sw_capture_fill_nosys) timed where it runs: inside the handler of a
// CPU-clock timer that interrupts a thread spinning under a chain of frame records (38 frames of
// this file's `descend`, then pthread's start_thread and clone3 in libc, which only unwind tables
// describe), or the same with glibc's qsort (two more frameless frames) in the middle. Built from
// CSampler's sources by run.sh, outside SwiftPM, so that one function can be timed alone, counted
// with `valgrind --tool=callgrind`, or built from two trees and compared. x86_64 only (rdtsc).
//
//   mode ring  : one capture per tick, as the ring's handler does (caches as the tick leaves them)
//   mode warm  : 200 captures per tick (the instruction cost without cold caches); also checks that
//                every repeat gives the first capture's frames (the row cache must not change them)
//   mode parts : the handler's parts one by one, then the capture
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
#include "sw_internal.h"
#include "sw_unwind_table.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

// Trees before the row cache (d1cf546 and older) take no object memo: build with -DHARNESS_OLD_FIND_ROW.
#ifdef HARNESS_OLD_FIND_ROW
#define FIND_ROW(pc, row) sw_cfi_find_row(pc, row)
#else
#define FIND_ROW(pc, row) sw_cfi_find_row(pc, row, NULL)
#endif

#define MAX_TICKS 4000
enum { MODE_RING, MODE_WARM, MODE_PARTS };
enum { T_CAPTURE, T_EMPTY, T_TAG, T_GEN, T_ROW, T_MODULE, T_EXEC, T_CLOCK, T_COUNT };
static const char *const part_names[T_COUNT] = {"capture", "(timer itself)", "sw_request_tag_read",
                                                "sw_maps_generation", "sw_cfi_find_row(pc)", "sw_module_lookup(pc)",
                                                "sw_maps_is_exec(pc)", "sw_now_ns"};

static int g_mode, g_ticks = 2000, g_in_qsort;
static volatile int g_stop;
static volatile uint64_t g_progress;
static pid_t g_tid;
static uint64_t g_t[T_COUNT][MAX_TICKS];
static volatile int g_tick;
static sw_stack_t g_st, g_first;
static sw_stack_bounds_t g_bounds;
static int g_mismatches;

// Serialized TSC: ~10 ns here, where rdtscp costs 60 (a nested VM).
static inline uint64_t tsc(void) {
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

static void on_tick(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)si;
    if (g_tick >= g_ticks) return;
    int i = g_tick;
    uint64_t pc = (uint64_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP], a;
    if (g_mode == MODE_RING) {
        a = tsc();
        sw_capture_fill_nosys(&g_st, uc, 100, &g_bounds);
        g_t[T_CAPTURE][i] = tsc() - a;
    } else if (g_mode == MODE_WARM) {
        a = tsc();
        for (int k = 0; k < 200; k++) {
            sw_capture_fill_nosys(&g_st, uc, 100, &g_bounds);
            if (k == 0) g_first = g_st;
            else if (g_st.count != g_first.count || g_st.stop_reason != g_first.stop_reason ||
                     memcmp(g_st.frames, g_first.frames, g_st.count * sizeof g_st.frames[0]) != 0) g_mismatches++;
        }
        g_t[T_CAPTURE][i] = (tsc() - a) / 200;
    } else {
        sw_cfi_row_t row;
        uint64_t lo, hi;
        a = tsc(); g_t[T_EMPTY][i] = tsc() - a;
        a = tsc(); (void)sw_request_tag_read(); g_t[T_TAG][i] = tsc() - a;
        a = tsc(); (void)sw_maps_generation(); g_t[T_GEN][i] = tsc() - a;
        a = tsc(); (void)FIND_ROW(pc, &row); g_t[T_ROW][i] = tsc() - a;
        a = tsc(); (void)sw_module_lookup(pc, &lo, &hi); g_t[T_MODULE][i] = tsc() - a;
        a = tsc(); (void)sw_maps_is_exec(pc); g_t[T_EXEC][i] = tsc() - a;
        a = tsc(); (void)sw_now_ns(); g_t[T_CLOCK][i] = tsc() - a;
        a = tsc();
        sw_capture_fill_nosys(&g_st, uc, 100, &g_bounds);
        g_t[T_CAPTURE][i] = tsc() - a;
    }
    g_tick = i + 1;
}

__attribute__((noinline)) static void spin(void) {
    while (!g_stop) g_progress++;
}

static int spinning_compare(const void *a, const void *b) {
    spin();
    return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) static void descend(int depth) {
    if (depth > 1) {
        descend(depth - 1);
    } else if (g_in_qsort) {
        int two[2] = {2, 1};
        qsort(two, 2, sizeof two[0], spinning_compare);
    } else {
        spin();
    }
    __asm__ volatile(""); // not a tail call: every level keeps its frame
}

static void *spinner(void *arg) {
    (void)arg;
    g_tid = gettid();
    descend(g_in_qsort ? 35 : 37);
    return NULL;
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "ring") && strcmp(argv[1], "warm") && strcmp(argv[1], "parts"))) {
        fprintf(stderr, "usage: %s ring|warm|parts [qsort] [ticks]\n", argv[0]);
        return 2;
    }
    g_mode = !strcmp(argv[1], "ring") ? MODE_RING : !strcmp(argv[1], "warm") ? MODE_WARM : MODE_PARTS;
    g_in_qsort = argc > 2 && !strcmp(argv[2], "qsort");
    if (argc > 3) g_ticks = atoi(argv[3]);
    if (g_ticks < 1 || g_ticks > MAX_TICKS) g_ticks = MAX_TICKS;
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    uint64_t c0 = tsc();
    usleep(100000);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    double per_ns = (double)(tsc() - c0) / ((double)(w1.tv_sec - w0.tv_sec) * 1e9 + (double)(w1.tv_nsec - w0.tv_nsec));
    sw_request_tag_prime();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_tick;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    pthread_t th;
    pthread_create(&th, NULL, spinner, NULL);
    while (g_tid == 0) usleep(1000);
    sw_maps_rebuild(); // the spinner's stack must be in the table (the ring does this at start)
    clockid_t cpu;
    pthread_getcpuclockid(th, &cpu);
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = g_tid;
    timer_t timer;
    timer_create(cpu, &sev, &timer);
    struct itimerspec its = {{0, 1000000}, {0, 1000000}};
    timer_settime(timer, 0, &its, NULL);
    while (g_tick < g_ticks) usleep(10000);
    timer_delete(timer);
    g_stop = 1;
    pthread_join(th, NULL);
    printf("%s%s: %u frames, %u by table, stop %u; %d ticks", argv[1], g_in_qsort ? " qsort" : "", g_st.count,
           g_st.table_frames, g_st.stop_reason, g_ticks);
    if (g_mode == MODE_WARM) printf("; repeats unlike the first: %d", g_mismatches);
    printf("\n");
    int skip = g_ticks >= 1000 ? 100 : 0, n = g_ticks - skip; // the first ticks pay first touches
    for (int p = 0; p < T_COUNT; p++) {
        if (p != T_CAPTURE && g_mode != MODE_PARTS) continue;
        uint64_t *v = g_t[p] + skip;
        qsort(v, (size_t)n, sizeof v[0], by_value);
        printf("  %-22s p10 %7.1f  p50 %7.1f  p90 %7.1f  p99 %7.1f ns\n", part_names[p], v[n / 10] / per_ns,
               v[n / 2] / per_ns, v[n * 9 / 10] / per_ns, v[n * 99 / 100] / per_ns);
    }
    return g_mismatches != 0;
}
