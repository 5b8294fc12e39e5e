#!/usr/bin/env bash
# End-to-end: builds the example servers (Examples/, one package that depends on this one by path)
# and checks Stallwatch's reports from outside, over 127.0.0.1 (Tests/EndToEnd/servers.py).
# Usage: scripts/e2e-servers.sh [--skip-matrix]   (scripts/test.sh runs the matrix as a step of its
# own, once nothing else runs beside it: its timing figures are measured ones)
set -euo pipefail
cd "$(dirname "$0")/.."
matrix=1
case "${1-}" in
  "") ;;
  --skip-matrix) matrix=0 ;;
  *) echo "usage: scripts/e2e-servers.sh [--skip-matrix]" >&2; exit 2 ;;
esac
# Each step's wall time, then the total (scripts/lib/steps.sh). A failed step's status is kept in
# $status (the last one wins) and the next steps still run: one log shows every failure.
STEP_PREFIX=e2e STEP_MODE=continue
. scripts/lib/steps.sh
started=$step_started
bin=Examples/.build/debug
# All the servers in one build: their shared dependencies (swift-nio, Stallwatch, ...) compile once.
echo "e2e: building Examples (HummingbirdServer, HummingbirdServerBare, NIOServer, VaporServer)"
t=$SECONDS
swift build --package-path Examples -Xcc -Werror -Xcc -Wall -Xcc -Wextra
echo "e2e: step build: $((SECONDS - t)) s"
step servers timeout 600 python3 Tests/EndToEnd/servers.py \
  "hummingbird=$bin/HummingbirdServer" \
  "nio=$bin/NIOServer" \
  "vapor=$bin/VaporServer"
# Request attribution: 20 rounds of 32 concurrent traced requests, one of which stalls; its report
# and its trace must name it ("attribution: N/20").
step attribution timeout 1500 python3 Tests/EndToEnd/attribution.py \
  "hummingbird=$bin/HummingbirdServer" \
  "vapor=$bin/VaporServer"
# The same with a handler asleep in usleep from its start (never signalled: its request is read
# from its blocked task without a signal), 10 rounds per server (about 25 s each).
step attribution-sleep timeout 900 python3 Tests/EndToEnd/attribution.py --kind sleep --rounds 10 \
  "hummingbird=$bin/HummingbirdServer" \
  "vapor=$bin/VaporServer"
# OpenTelemetry: the Hummingbird example exporting OTLP/HTTP to a real receiver built on the official
# opentelemetry-proto definitions (strict on unknown fields); per stall one log record at the stall
# and one at its end on the stalled request's trace, and its span there (about 15 s).
step otlp-receiver-self-test python3 Tests/EndToEnd/otlp_receiver.py --self-test
step otel timeout 180 python3 Tests/EndToEnd/otel.py "$bin/HummingbirdServer"
# The fault-injection matrix's short form, on the servers just built: it prints the table and its
# goal verdicts; it fails on structural problems (a server that does not start, an injection route
# that answers wrongly) and when a count goal misses (once, loop/job, function, cause), which a
# loaded machine does not move; the timing goals are figures it prints.
if [ "$matrix" = 1 ]; then step stall-matrix scripts/stall-matrix.sh --no-build --strict-counts; fi
echo "e2e: total: $((SECONDS - started)) s (exit $status)"
exit "$status"
