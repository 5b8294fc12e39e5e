#!/usr/bin/env bash
# A new user's afternoon, checked: a fresh package depends on Stallwatch through a git URL (this
# commit, cloned), pastes the README's wiring (the Hummingbird example's main.swift and
# IngestLoop.swift, which scripts/check-readme-snippets.py proves the README shows verbatim) and
# the README's Package.swift (Tests/Consumer/Package.swift, its URL pointed at the clone), adds
# only its own routes, builds, serves, answers, exports /metrics and stops cleanly on SIGTERM; then
# reads the stall report its blocking route left with `swift run stallwatch show`, from its own
# package (the README's "Getting the stallwatch command").
#
# Usage: scripts/consumer-check.sh [build DIR | run DIR]
# Without arguments, all of it in a temporary directory. `build DIR` only prepares and builds the
# package in DIR (scripts/test.sh runs that beside its end-to-end step, which leaves the cores
# mostly idle); `run DIR` then does the rest with what DIR holds, and removes DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
mode=${1:-all}
case "$mode" in
  all) work=$(mktemp -d /tmp/stallwatch-consumer.XXXXXX) ;;
  build | run)
    [ "$#" -eq 2 ] || { echo "usage: scripts/consumer-check.sh [build DIR | run DIR]" >&2; exit 2; }
    work=$2
    ;;
  *) echo "usage: scripts/consumer-check.sh [build DIR | run DIR]" >&2; exit 2 ;;
esac
app="$work/MyService"
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  # A build is kept for `run`. Only what this script made is removed (DIR is the caller's).
  if [ "$mode" != build ]; then
    rm -rf "$work/stallwatch" "$app" "$work/reports" "$work/out.log" "$work/show.txt"
    rmdir "$work" 2>/dev/null || true
  fi
}
trap cleanup EXIT
# Clones this commit and builds the package that depends on it, the stallwatch command too.
build_package() {
  mkdir -p "$work"
  git clone --quiet "$repo" "$work/stallwatch"
  git -C "$work/stallwatch" checkout --quiet "$(git rev-parse HEAD)"
  mkdir -p "$app/Sources/MyService"
  sed "s#.package(url: \"https://github.com/OWNER/stallwatch\", branch: \"main\")#.package(url: \"file://$work/stallwatch\", revision: \"$(git rev-parse HEAD)\")#" \
    Tests/Consumer/Package.swift > "$app/Package.swift"
  grep -q "file://$work/stallwatch" "$app/Package.swift" || { echo "consumer: the README's package line changed; update this script" >&2; exit 1; }
  # main.swift without the example's one test-aid line (an in-memory tracer the README leaves out).
  grep -v 'ExampleTracer' Examples/HummingbirdServer/Sources/HummingbirdServer/main.swift > "$app/Sources/MyService/main.swift"
  cp Examples/HummingbirdServer/Sources/HummingbirdServer/IngestLoop.swift \
     Examples/HummingbirdServer/Sources/HummingbirdServer/StallAttributionMiddleware.swift \
     Examples/HummingbirdServer/Sources/HummingbirdServer/StallEvents.swift \
     Tests/Consumer/Routes.swift "$app/Sources/MyService/"
  echo "consumer: building a fresh package that depends on Stallwatch by git URL"
  swift build --package-path "$app"
  # The command `swift run stallwatch show` runs below, built with the rest.
  swift build --package-path "$app" --product stallwatch
}
if [ "$mode" != run ]; then build_package; fi
if [ "$mode" = build ]; then exit 0; fi
[ -x "$app/.build/debug/MyService" ] || { echo "consumer: FAIL, no build in $work (run scripts/consumer-check.sh build $work first)"; exit 1; }
mkdir -p "$work/reports"
PORT=0 STALLWATCH_REPORT_DIR="$work/reports" "$app/.build/debug/MyService" > "$work/out.log" 2>&1 &
server=$!
port=
for _ in $(seq 1 120); do
  port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$work/out.log" | head -1)
  [ -n "$port" ] && break
  sleep 0.5
done
[ -n "$port" ] || { echo "consumer: FAIL, never listened"; cat "$work/out.log"; exit 1; }
body=$(curl -sf "http://127.0.0.1:$port/")
[ "$body" = "hello from a service that pasted the README" ] || { echo "consumer: FAIL, GET / gave: $body"; exit 1; }
metrics=$(curl -sf "http://127.0.0.1:$port/metrics")   # whole, then grep: no SIGPIPE under pipefail
grep -q '^# TYPE stallwatch_watchdog_lateness_seconds histogram' <<<"$metrics" \
  || { echo "consumer: FAIL, /metrics has no stallwatch metrics"; exit 1; }
slow=$(curl -sf "http://127.0.0.1:$port/slow")     # blocks its pool thread 1.2 s: one stall report
[ "$slow" = "done" ] || { echo "consumer: FAIL, GET /slow gave: $slow"; exit 1; }
kill -TERM "$server"
status=0
wait "$server" || status=$?
server=
[ "$status" -eq 0 ] || { echo "consumer: FAIL, exit status $status after SIGTERM"; cat "$work/out.log"; exit 1; }
report=$(ls "$work/reports"/*.json 2>/dev/null | head -1)
[ -n "$report" ] || { echo "consumer: FAIL, GET /slow left no report in $work/reports"; cat "$work/out.log"; exit 1; }
echo "consumer: swift run stallwatch show, from the consumer's package"
(cd "$app" && swift run stallwatch show "$report") > "$work/show.txt" \
  || { echo "consumer: FAIL, swift run stallwatch show failed"; cat "$work/show.txt"; exit 1; }
head -4 "$work/show.txt"
grep -q '^blamed: MyService.slowLookup() -> ()' "$work/show.txt" \
  || { echo "consumer: FAIL, the summary does not start at the service's slowLookup"; cat "$work/show.txt"; exit 1; }
echo "consumer: PASS (built from a git URL, served, exported metrics, stopped on SIGTERM with status 0, its report read by swift run stallwatch)"
