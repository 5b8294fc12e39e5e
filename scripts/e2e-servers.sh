#!/usr/bin/env bash
# End-to-end: builds the example servers (Examples/, one package that depends on this one by path)
# and checks Stallwatch's reports from outside, over 127.0.0.1 (Tests/EndToEnd/servers.py).
set -euo pipefail
cd "$(dirname "$0")/.."
# All the servers in one build: their shared dependencies (swift-nio, Stallwatch, ...) compile once.
echo "e2e: building Examples (HummingbirdServer, HummingbirdServerBare, NIOServer, VaporServer)"
swift build --package-path Examples -Xcc -Werror -Xcc -Wall -Xcc -Wextra
status=0
timeout 600 python3 Tests/EndToEnd/servers.py \
  "hummingbird=Examples/.build/debug/HummingbirdServer" \
  "nio=Examples/.build/debug/NIOServer" \
  "vapor=Examples/.build/debug/VaporServer" || status=$?
# Request attribution: 20 rounds of 32 concurrent traced requests, one of which stalls; its report
# and its trace must name it ("attribution: N/20").
timeout 1500 python3 Tests/EndToEnd/attribution.py \
  "hummingbird=Examples/.build/debug/HummingbirdServer" \
  "vapor=Examples/.build/debug/VaporServer" || status=$?
# The same with a handler asleep in usleep from its start (never signalled: its request is read
# from its blocked task without a signal), 10 rounds per server (about 25 s each).
timeout 900 python3 Tests/EndToEnd/attribution.py --kind sleep --rounds 10 \
  "hummingbird=Examples/.build/debug/HummingbirdServer" \
  "vapor=Examples/.build/debug/VaporServer" || status=$?
# OpenTelemetry: the Hummingbird example exporting OTLP/HTTP to a real receiver built on the official
# opentelemetry-proto definitions (strict on unknown fields); per stall one log record at the stall
# and one at its end on the stalled request's trace, and its span there (about 15 s).
python3 Tests/EndToEnd/otlp_receiver.py --self-test || status=$?
timeout 180 python3 Tests/EndToEnd/otel.py Examples/.build/debug/HummingbirdServer || status=$?
# The fault-injection matrix's short form, on the servers just built: it prints the table and its
# goal verdicts; it fails on structural problems (a server that does not start, an injection route
# that answers wrongly) and when a count goal misses (once, loop/job, function, cause), which a
# loaded machine does not move; the timing goals are figures it prints.
scripts/stall-matrix.sh --no-build --strict-counts || status=$?
exit "$status"
