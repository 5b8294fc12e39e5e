#!/usr/bin/env bash
# CSampler's C hot path on aarch64 without arm64 hardware, and the same test natively on x86_64.
#
# Builds CSampler/src/*.c with Tests/CrossArch/cross_test.c twice — with gcc for this machine and
# with aarch64-linux-gnu-gcc — and runs the native binary directly and the aarch64 one under
# qemu-aarch64 (user-mode emulation: the aarch64 program runs on this kernel, its system calls
# translated). Each run installs the sampling handler and checks, on real threads: a capture by
# signal with the frame-pointer walk and with libunwind on the handler's stack copy, libunwind on a
# held thread's live stack (snapshot), a frameless leaf's caller (x86_64: from the stack, arm64:
# from LR), a timer ring on a spinning thread's CPU clock, call-instruction decoding on the test's
# own code, the frame-record scan for a thread blocked in read(), and that the syscall numbers in
# the Swift tables (SyscallNumber.swift, BlockedSyscall.swift) are the compiler's SYS_* for the
# architecture (scripts/gen-cross-syscalls.py).
#
# What qemu-user cannot emulate faithfully, and where that is covered instead:
# - process_vm_readv is not implemented (ENOSYS). CSampler reads code and unwind tables through it
#   (sw_read_own) so that an unmapped page is a short read, not a fault. Under qemu the test links
#   with --wrap=sw_read_own and does those reads through a pipe (also EFAULT-safe); the real
#   process_vm_readv path runs natively here and in the Swift suites.
# - /proc/self/task/*/syscall describes the emulator's host thread (x86_64 numbers, host SP and PC),
#   not the guest's: under qemu the blocked-thread scan is fed the SP and PC the thread recorded
#   itself; the real /proc path runs in the native x86_64 run here and in the Swift suites
#   (SyscallScanTests, ThreadFactsTests).
# - CPU-clock timers measure the emulator's host thread, which also translates code: the ring's
#   sampling rate and handler CPU times are not arm64's. Only "samples arrive and hold the right
#   frames" is checked under qemu; rates and costs are measured natively (Swift suites, bench).
# - qemu delivers a signal at a translation-block boundary, never in the middle of a block: PCs are
#   block starts, a handler never lands between two arbitrary instructions (e.g. inside a prologue
#   after `stp x29, x30` but before `mov x29, sp`), and signal latency is the emulator's. The
#   mid-prologue cases are reasoned about in sw_arch.h / blocked_stack.c and exercised on x86_64.
# - Memory ordering is the host's (x86 TSO), stronger than arm64's: a missing barrier in the
#   request protocol would not show here; it uses C11 atomics with explicit orders throughout.
# - Kernel facts come from this x86_64 kernel: 4 KiB pages (an arm64 kernel may use 16 or 64 KiB;
#   own_memory.c asks sysconf), mincore and process_vm_readv answers, signal frame layout as qemu
#   builds it rather than an arm64 kernel.
# - Pointer authentication and BTI are not enabled by these binaries; stripping of PAC bits is
#   checked on constructed values only.
#
# Needs (scripts/install-deps.sh installs them): gcc-aarch64-linux-gnu, qemu-user, and the arm64
# libc6-dev, libunwind-dev and libnuma-dev (Debian multiarch, beside the amd64 ones).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
out=.build-cross
mkdir -p "$out"
for tool in gcc aarch64-linux-gnu-gcc qemu-aarch64 python3; do
  command -v "$tool" >/dev/null || { echo "cross-arch: $tool not found (run scripts/install-deps.sh)" >&2; exit 1; }
done
[ -e /usr/lib/aarch64-linux-gnu/libunwind-generic.so ] || {
  echo "cross-arch: libunwind-dev:arm64 is not installed (run scripts/install-deps.sh)" >&2; exit 1; }

python3 scripts/gen-cross-syscalls.py "$out/cross_syscalls.h"
CFLAGS=(-std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -fno-omit-frame-pointer -O2 -g
        -ICSampler/include -ICSampler/src -I"$out")
# -rdynamic: the test names frames with dladdr, which sees exported symbols only.
# --wrap=sw_read_own: see cross_test.c (qemu-user lacks process_vm_readv; native runs are unchanged).
LIBS=(-rdynamic -Wl,--wrap=sw_read_own -lunwind-generic -lunwind -lnuma -ldl -lpthread)
SOURCES=(CSampler/src/*.c Tests/CrossArch/cross_test.c)

status=0
echo "== x86_64, native (gcc)"
gcc "${CFLAGS[@]}" "${SOURCES[@]}" "${LIBS[@]}" -o "$out/cross_test.x86_64"
timeout 120 "$out/cross_test.x86_64" || status=1

echo "== aarch64 under qemu-user (aarch64-linux-gnu-gcc)"
aarch64-linux-gnu-gcc "${CFLAGS[@]}" "${SOURCES[@]}" "${LIBS[@]}" -o "$out/cross_test.aarch64"
# The arm64 loader and libraries are Debian's multiarch packages, in / beside the amd64 ones.
QEMU_LD_PREFIX=/ timeout 120 qemu-aarch64 "$out/cross_test.aarch64" --emulated || status=1

echo "cross-arch: $(( $(date +%s) - start )) s"
exit "$status"
