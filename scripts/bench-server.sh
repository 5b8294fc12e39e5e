#!/usr/bin/env bash
# A real server under load: installs wrk, builds `bench` and the Hummingbird example (Examples/) in release
# mode, then runs `bench server` (watchdog on/off in alternating rounds). Extra arguments go to it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --bench
swift build -c release --product bench -Xcc -Werror -Xcc -Wall -Xcc -Wextra
# The two servers it compares, and not the rest of the examples package (Vapor, NIO).
swift build -c release --package-path Examples --product HummingbirdServer -Xcc -Werror -Xcc -Wall -Xcc -Wextra
swift build -c release --package-path Examples --product HummingbirdServerBare -Xcc -Werror -Xcc -Wall -Xcc -Wextra
.build/release/bench server "$@"
