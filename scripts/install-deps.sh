#!/usr/bin/env bash
# Installs the system packages Stallwatch builds, tests and benchmarks with (Debian 12, as root).
# Idempotent: packages already present are left alone.
set -euo pipefail
need=(libunwind-dev libnuma-dev zlib1g-dev liblzma-dev)
# The Prometheus end-to-end test and the consumer check.
need+=(prometheus curl)
# Real consumers of the exports, used by tests: go tool pprof, protoc --decode, headless Chromium;
# libc6-dbg names libc's internal frames (/usr/lib/debug/.build-id).
need+=(golang-go protobuf-compiler chromium libc6-dbg binutils xz-utils)
if [ "${1:-}" = "--bench" ]; then
  need+=(libgoogle-perftools-dev wrk)
fi
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
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "install-deps: swift is not on PATH (expected the Swift 6.x toolchain)" >&2; exit 1; }
