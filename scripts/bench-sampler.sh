#!/usr/bin/env bash
# The benchmark command: installs what it needs, builds in release mode, runs `bench sampler`.
# Extra arguments go to `bench sampler` (see `bench sampler --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --bench
swift build -c release --product bench -Xcc -Werror -Xcc -Wall -Xcc -Wextra
.build/release/bench sampler "$@"
