// Where the C core samples. Every other header in include/ is plain C that compiles anywhere; what
// stands behind it does not: the sampler is built from Linux's signals, /proc, perf events, timerfd,
// epoll, futexes, libunwind and libnuma. On Linux the files in src/ implement the headers; on any
// other platform (or on Linux with STALLWATCH_PORTABLE_ONLY defined, which is how CI proves the
// other platforms' branch builds and behaves) they compile to nothing and no_sampler.c answers every
// call with "not here": -ENOSYS, an empty list, a hook that is not installed.
#ifndef SW_PLATFORM_H
#define SW_PLATFORM_H

#if defined(__linux__) && !defined(STALLWATCH_PORTABLE_ONLY)
#define SW_PLATFORM_SAMPLES 1
#else
#define SW_PLATFORM_SAMPLES 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

/// 1 when this build captures stacks and reads thread facts (Linux), 0 when every call of the C core
/// answers that it is not available here.
int sw_platform_samples(void);

#ifdef __cplusplus
}
#endif
#endif
