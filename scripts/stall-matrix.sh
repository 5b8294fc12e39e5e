#!/usr/bin/env bash
# The labelled fault-injection matrix: builds the example servers, injects known stalls
# into each over 127.0.0.1 and matches every report to its stall (Tests/EndToEnd/matrix.py).
#   scripts/stall-matrix.sh            short form (each case 4 times, 15 s of wrk per server), ~6 min
#   scripts/stall-matrix.sh --full     full form (32 per case, 10 min of wrk per server), ~1.5 h
#   Both forms also block every cooperative-pool worker at once (the pool deadlock) on hummingbird and
#   vapor, in processes of their own with no load: 5 times per server (short), 32 (full). Measured on
#   2 CPUs: the short form took 449 s of matrix.py without it, 493 s with it (its own phase 42 s).
#   --strict: exit 1 when a goal is a MISS; --strict-counts: when a count goal is (once, loop/job,
#   function, cause, pool deadlock); --no-build: use the binaries already built.
# Results: the table on stdout, JSON in .build/stall-matrix/results.json (or --json PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
build=1
args=()
for a in "$@"; do
  if [ "$a" = "--no-build" ]; then build=0; else args+=("$a"); fi
done
if [ "$build" = 1 ]; then
  echo "stall-matrix: building Examples (NIOServer, HummingbirdServer, VaporServer)"
  swift build --package-path Examples -Xcc -Werror -Xcc -Wall -Xcc -Wextra
fi
# The harness's own matching and scoring first: a bug there would pass for a verdict on Stallwatch.
python3 Tests/EndToEnd/matrix_selftest.py > /dev/null || { python3 Tests/EndToEnd/matrix_selftest.py; exit 2; }
mkdir -p .build/stall-matrix
limit=1800
case " ${args[*]-} " in *" --full "*) limit=14400 ;; esac
exec timeout "$limit" python3 Tests/EndToEnd/matrix.py --json .build/stall-matrix/results.json ${args[@]+"${args[@]}"} \
  "nio=Examples/.build/debug/NIOServer" \
  "hummingbird=Examples/.build/debug/HummingbirdServer" \
  "vapor=Examples/.build/debug/VaporServer"
