#!/usr/bin/env bash
# The test command: installs what it needs, builds with C warnings as errors, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's wall time, and the total at the end (scripts/lib/steps.sh). A failed step stops the
# run with its own status, as a failed command under `set -e` would.
STEP_PREFIX=test STEP_MODE=stop
. scripts/lib/steps.sh
started=$step_started
step install-deps scripts/install-deps.sh
# -Werror goes first: SwiftPM 6.3 rejects a trailing -Werror.
CFLAGS=(-Xcc -Werror -Xcc -Wall -Xcc -Wextra)
step build swift build --build-tests "${CFLAGS[@]}"
step readme-snippets python3 scripts/check-readme-snippets.py
# README.md's goals table and docs/benchmarks.md must be what docs/bench/*.json give.
step overhead-tables python3 scripts/overhead-tables.py --check
# What the signal handler can call, read from the compiled objects: fails on malloc, locks, etc.,
# and on any system call on the timer ring's path (the request path: only the listed ones).
step handler-safety python3 scripts/check-handler-safety.py $(find -L .build/debug/CSampler.build -name '*.o')
# The same check against system calls planted in a copy of the call graph: it must catch each one.
step handler-safety-self-test \
  python3 scripts/check-handler-safety.py --self-test $(find -L .build/debug/CSampler.build -name '*.o')
# The ASan build and the examples' build need nothing the unit tests make: they run beside them,
# in the scheduler's idle class (SCHED_IDLE), so they take only CPU time no test wants. Their
# output goes to a log printed when the step is waited for; the job is killed if the run stops.
ASAN_BUILD=(swift build --build-tests --scratch-path .build-asan -Xswiftc -sanitize=address
  -Xcc -fsanitize=address,undefined -Xcc -fno-sanitize-recover=undefined)
if [ "$#" -eq 0 ]; then
  PREBUILD_DIR=$(mktemp -d /tmp/stallwatch-prebuild.XXXXXX)
  setsid bash -c '
    dir=$1; shift
    t=$SECONDS; rc=0
    chrt --idle 0 "$@" > "$dir/asan.log" 2>&1 || rc=$?
    echo "$rc $((SECONDS - t))" > "$dir/asan.rc"
    # The same command as scripts/e2e-servers.sh: its own build then finds nothing to do.
    # Resolved first: sources checked out while the build that fetched them ran were compiled
    # again by e2e-servers.sh (Hummingbird and HummingbirdCore, 28-48 s in two CI runs).
    t=$SECONDS; rc=0
    { chrt --idle 0 swift package --package-path Examples resolve \
        && chrt --idle 0 swift build --package-path Examples -Xcc -Werror -Xcc -Wall -Xcc -Wextra; } > "$dir/examples.log" 2>&1 || rc=$?
    echo "$rc $((SECONDS - t))" > "$dir/examples.rc"
  ' prebuild "$PREBUILD_DIR" "${ASAN_BUILD[@]}" &
  PREBUILD_PID=$!
  LATE_PID= CONSUMER_DIR=
  stop_background() {
    kill -- -"$PREBUILD_PID" 2>/dev/null || true
    if [ -n "$LATE_PID" ]; then kill -- -"$LATE_PID" 2>/dev/null || true; fi
    if [ -n "$CONSUMER_DIR" ]; then rm -rf "$CONSUMER_DIR"; fi
  }
  trap stop_background EXIT
fi
# Waits for the background job NAME (asan, examples; api-breaks, consumer-build: see below),
# run by the process group PID: its time, and its log when it failed.
wait_prebuild() {
  local name=$1 pid=${2:-$PREBUILD_PID} t=$SECONDS
  while [ ! -f "$PREBUILD_DIR/$name.rc" ]; do
    kill -0 "$pid" 2>/dev/null || { echo "test: the background builds stopped before $name"; cat "$PREBUILD_DIR"/*.log; return 1; }
    sleep 1
  done
  local rc took
  read -r rc took < "$PREBUILD_DIR/$name.rc"
  echo "test: $name, run beside the other steps: $took s, $((SECONDS - t)) s waited for"
  if [ "$rc" -ne 0 ]; then tail -n 80 "$PREBUILD_DIR/$name.log"; fi
  return "$rc"
}
# Serially: several suites measure CPU time and scheduling; on 2 cores, parallel suites would
# starve each other's "busy" threads and turn a CPU-bound stall into a starved one.
# The log is kept: on failure, the failing tests' lines are printed again at the end, where a CI
# that keeps only the tail of the output still shows them.
UNIT_LOG=$(mktemp /tmp/stallwatch-unit.XXXXXX)
t=$SECONDS
if ! swift test --skip-build --no-parallel "$@" 2>&1 | tee "$UNIT_LOG"; then
  echo "test: step unit-tests: $((SECONDS - t)) s (failed); total: $((SECONDS - started)) s"
  echo "=== failed tests (from $UNIT_LOG) ==="
  grep -E -A 4 '✘|recorded an issue|error:|Expectation failed|Fatal error|Caught signal' "$UNIT_LOG" | cut -c1-400 | head -160 || true
  exit 1
fi
echo "test: step unit-tests: $((SECONDS - t)) s"
# Skipped when the caller narrows the run with arguments (e.g. --filter):
if [ "$#" -eq 0 ]; then
  # CSampler's C hot path built for aarch64 and run under qemu-user, and the same test natively.
  step cross-arch scripts/cross-arch.sh
  # The package as it builds off Linux (STALLWATCH_PORTABLE_ONLY), with its own test suite.
  step portable scripts/portable-check.sh
  # AddressSanitizer over the whole package and UBSan over the C target: a service built with
  # -sanitize=address must be able to use Stallwatch (its raw-stack readers are exempt from ASan,
  # see SW_RAW_STACK_READER). Leak detection is off: Foundation's Process leaks a weak reference on
  # every run (not ours). What it skips, each with its reason: scripts/asan-skip.txt.
  step asan-build wait_prebuild asan
  step asan-test env ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    swift test --skip-build --scratch-path .build-asan --no-parallel \
    --skip "$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' scripts/asan-skip.txt | paste -sd '|')"
  # The DocC catalogs (Sources/*/*.docc): every link resolves, no warning.
  step docc scripts/docc-check.sh Stallwatch StallwatchReport
  # libFuzzer on the /proc parsers and the report decoder, a minute each; earlier crashes replayed.
  step fuzz scripts/fuzz.sh
  # Real servers (Hummingbird 2, Vapor 4, raw SwiftNIO) from Examples/ (one package), driven over
  # 127.0.0.1; it prints its own steps' times.
  # Its own build of the examples is then a check that nothing is left to build.
  step examples-build wait_prebuild examples
  # Two checks that only build run beside the end-to-end checks, in the idle class as above: those
  # leave the cores mostly idle, and after them the two took 232 s of the run (CI, 35 min in
  # all). They are waited for before the stall matrix, whose timing figures are measured ones
  # (its latency p99 rose from 545 to 552 ms with a build beside its first minute). In turn:
  # - no unannounced source break of the library products against the last release
  #   (api/baseline), which compiles that release;
  # - the build of a fresh package depending on this commit by git URL, with the README's wiring
  #   pasted (scripts/consumer-check.sh); it is served and checked at the end.
  CONSUMER_DIR=$(mktemp -d /tmp/stallwatch-consumer.XXXXXX)
  setsid bash -c '
    dir=$1 consumer=$2; shift 2
    t=$SECONDS; rc=0
    chrt --idle 0 scripts/api-breaks.sh "$@" > "$dir/api-breaks.log" 2>&1 || rc=$?
    echo "$rc $((SECONDS - t))" > "$dir/api-breaks.rc"
    t=$SECONDS; rc=0
    chrt --idle 0 scripts/consumer-check.sh build "$consumer" > "$dir/consumer-build.log" 2>&1 || rc=$?
    echo "$rc $((SECONDS - t))" > "$dir/consumer-build.rc"
  ' late "$PREBUILD_DIR" "$CONSUMER_DIR" "${CFLAGS[@]}" &
  LATE_PID=$!
  step e2e-servers scripts/e2e-servers.sh --skip-matrix
  step api-breaks wait_prebuild api-breaks "$LATE_PID"
  cat "$PREBUILD_DIR/api-breaks.log"
  step consumer-build wait_prebuild consumer-build "$LATE_PID"
  # The fault-injection matrix on the servers just built (scripts/e2e-servers.sh says what fails it).
  step stall-matrix scripts/stall-matrix.sh --no-build --strict-counts
  # The Hummingbird example's /metrics (swift-prometheus) scraped by a real Prometheus server.
  step prometheus timeout 300 python3 Tests/EndToEnd/prometheus.py Examples/.build/debug/HummingbirdServer README.md
  # The public surface, counted and printed; the package-only modules must declare nothing public.
  step public-api python3 scripts/public-api.py
  step consumer scripts/consumer-check.sh run "$CONSUMER_DIR"
fi
echo "test: total: $((SECONDS - started)) s"
