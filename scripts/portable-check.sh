#!/usr/bin/env bash
# Stallwatch as it builds where it cannot sample (macOS, any platform but Linux), checked on Linux:
# STALLWATCH_PORTABLE_ONLY, defined for C and Swift, takes the non-Linux side of
# CSampler/include/sw_platform.h and of Sources/Stallwatch/Platform. Builds Tests/Portable (which
# depends on this package by path) into .build-portable, C warnings as errors; checks that the C
# core then calls nothing but POSIX; runs the suite: documented snippets compile, start() says its
# documented sentence once, heartbeat and ping stalls are reported without stacks. Before building,
# scripts/check-platform-boundary.py checks the Swift sources for what only a macOS build would catch.
set -euo pipefail
cd "$(dirname "$0")/.."
SCRATCH="$PWD/.build-portable"

# First, from the source: every Swift file imports the C library through the one conditional block,
# and only Sources/*/Platform/ asks for the platform or names a Linux-only API (what a macOS build
# would trip on, checked without one). The self-test plants violations and fails unless each is caught.
python3 scripts/check-platform-boundary.py --self-test
python3 scripts/check-platform-boundary.py

# -Werror goes first: SwiftPM 6.3 rejects a trailing -Werror.
FLAGS=(-Xcc -Werror -Xcc -Wall -Xcc -Wextra
       -Xcc -DSTALLWATCH_PORTABLE_ONLY -Xswiftc -DSTALLWATCH_PORTABLE_ONLY)
swift build --package-path Tests/Portable --scratch-path "$SCRATCH" --build-tests "${FLAGS[@]}"

# The C core built this way must need no Linux service: every symbol it leaves undefined is POSIX
# (a Linux-only call left outside the guard would show here, e.g. syscall, epoll_wait, dladdr).
# __errno_location and __tls_get_addr are how glibc's errno and a _Thread_local are reached.
POSIX='^(__errno_location|__tls_get_addr|clock_gettime|gettimeofday|memset|pthread_cond_broadcast|pthread_cond_timedwait|pthread_mutex_lock|pthread_mutex_unlock|sysconf)$'
objects=$(find -L "$SCRATCH/debug/CSampler.build" -name '*.o')
[ -n "$objects" ] || { echo "portable: no CSampler objects under $SCRATCH" >&2; exit 1; }
# shellcheck disable=SC2086
undefined=$(nm -u $objects | awk 'NF == 2 { print $2 }' | sort -u)
unexpected=$(grep -Ev "$POSIX" <<<"$undefined" || true)
if [ -n "$unexpected" ]; then
  echo "portable: the C core calls beyond POSIX with the Linux-only parts off:" >&2
  echo "$unexpected" >&2
  exit 1
fi
# shellcheck disable=SC2086
defined=$(nm $objects)   # whole, then grep: no SIGPIPE under pipefail
grep -q ' T sw_platform_samples$' <<<"$defined" || { echo "portable: sw_platform_samples missing" >&2; exit 1; }
# Every function the C core's headers declare is defined with the Linux-only parts off: the suite
# below links only what the library calls, while the stallwatch command and the bench call more: a
# missing stub would fail their link on macOS, unseen here.
# (A `static inline` function is defined in its header: nothing to link.)
inline=$(grep -ohE 'static inline[^(]*\bsw_[a-z0-9_]+[[:space:]]*\(' CSampler/include/*.h | grep -oE 'sw_[a-z0-9_]+' | sort -u)
declared=$(comm -23 <(grep -ohE '\bsw_[a-z0-9_]+[[:space:]]*\(' CSampler/include/*.h | tr -d ' (' | sort -u) <(echo "$inline"))
stubbed=$(awk '$2 == "T" { print $3 }' <<<"$defined" | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$stubbed"))
if [ -n "$missing" ]; then
  echo "portable: declared in CSampler/include but not defined with the Linux-only parts off:" >&2
  echo "$missing" >&2
  exit 1
fi
echo "portable: the C core's undefined symbols are POSIX only ($(wc -l <<<"$undefined") symbols);" \
     "its $(wc -l <<<"$declared") declared functions are all defined"

swift test --package-path Tests/Portable --scratch-path "$SCRATCH" --skip-build --no-parallel
echo "portable: PASS"
