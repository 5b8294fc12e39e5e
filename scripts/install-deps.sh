#!/usr/bin/env bash
# Installs the system packages Stallwatch builds, tests and benchmarks with (Debian 12, as root).
# Idempotent: packages already present are left alone.
set -euo pipefail
need=(libunwind-dev libnuma-dev zlib1g-dev liblzma-dev)
# The Prometheus end-to-end test and the consumer check.
need+=(prometheus curl)
# Debian's own libraries without frame pointers: called by the foreign-library stall tests and
# linked by Examples/BlockingWork for the fault-injection matrix (scripts/stall-matrix.sh); wrk
# loads the servers there.
need+=(libssl-dev libsqlite3-dev wrk)
# Real consumers of the exports, used by tests: go tool pprof, protoc --decode, headless Chromium;
# libc6-dbg names libc's internal frames (/usr/lib/debug/.build-id).
need+=(golang-go protobuf-compiler chromium libc6-dbg binutils xz-utils)
# gperftools: the bench's peer, and the host-adversity test that runs its ProfilerStart beside us.
need+=(libgoogle-perftools-dev)
# The arm64 packages (with :arm64, Debian multiarch beside the amd64 ones) and the cross compiler
# and qemu-user are for scripts/cross-arch.sh: CSampler built for aarch64 and run under emulation.
need+=(gcc-aarch64-linux-gnu qemu-user libc6-dev:arm64 libunwind-dev:arm64 libnuma-dev:arm64)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: need root to install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # Only on first use: apt-get update is what would make a no-op run slow.
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The OTLP receiver of the OpenTelemetry end-to-end test (Tests/EndToEnd/otlp_receiver.py): the
# official OTLP definitions, from PyPI.
python3 -c 'import opentelemetry.proto.logs.v1.logs_pb2' 2>/dev/null \
  || python3 -m pip install --quiet --disable-pip-version-check 'opentelemetry-proto>=1.45,<2'
command -v swift >/dev/null || { echo "install-deps: swift is not on PATH (expected the Swift 6.x toolchain)" >&2; exit 1; }
# The kernel's tracepoints (tracefs), which the test that counts the sampled thread's system calls
# reads; a fresh VM may not have it mounted. Without it that test is skipped and says why.
if [ "$(id -u)" -eq 0 ] && [ -d /sys/kernel/tracing ] && [ ! -d /sys/kernel/tracing/events ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || echo "install-deps: tracefs could not be mounted" >&2
fi
