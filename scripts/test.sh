#!/usr/bin/env bash
# The test command: installs what it needs, builds with C warnings as errors, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# -Werror goes first: SwiftPM 6.3 rejects a trailing -Werror.
CFLAGS=(-Xcc -Werror -Xcc -Wall -Xcc -Wextra)
swift build --build-tests "${CFLAGS[@]}"
# What the signal handler can call, read from the compiled objects: fails on malloc, locks, etc.
python3 scripts/check-readme-snippets.py
python3 scripts/check-handler-safety.py $(find .build -path '*/debug/CSampler.build/*.o')
# Serially: several suites measure CPU time and scheduling; on 2 cores, parallel suites would
# starve each other's "busy" threads and turn a CPU-bound stall into a starved one.
swift test --skip-build --no-parallel "$@"
# Real servers (Hummingbird 2, raw SwiftNIO) from Examples/, driven over 127.0.0.1. Skipped when
# the caller narrows the run with arguments (e.g. --filter).
if [ "$#" -eq 0 ]; then
  scripts/e2e-servers.sh
fi
