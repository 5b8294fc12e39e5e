#!/usr/bin/env bash
# A real server under load: installs wrk, builds `bench` and Examples/HummingbirdServer in release
# mode, then runs `bench server` (watchdog on/off in alternating rounds). Extra arguments go to it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --bench
swift build -c release --product bench -Xcc -Werror -Xcc -Wall -Xcc -Wextra
swift build -c release --package-path Examples/HummingbirdServer -Xcc -Werror -Xcc -Wall -Xcc -Wextra
.build/release/bench server "$@"
