#!/usr/bin/env bash
# Runs the benches one after another, each writing its BenchRecord to docs/bench/<name>.json, then
# regenerates README.md's goals table and docs/benchmarks.md from those files
# (scripts/overhead-tables.py). Commit the JSON files with the generated files.
#
#   scripts/bench-all.sh                   sampler, probe, detect, server, memory, allocations, wake-floor (≈ 9 min, plus the builds)
#   scripts/bench-all.sh probe detect      only these (any `bench` subcommand that takes --json)
#   BENCH_ARGS_probe="--idle-seconds 20" scripts/bench-all.sh probe
#                                          extra arguments for one bench (BENCH_ARGS_<name>)
#
# Runs serially on purpose: two benches at once measure each other, and waits for a quiet machine
# before each (see wait_quiet). The machine's load average at the start and end of each run is in
# its record; a loaded run is kept as measured, never edited.
set -euo pipefail
cd "$(dirname "$0")/.."
benches=("$@")
[ ${#benches[@]} -gt 0 ] || benches=(sampler probe detect server memory allocations wake-floor)

scripts/install-deps.sh --bench
swift build -c release --product bench -Xcc -Werror -Xcc -Wall -Xcc -Wextra
for name in "${benches[@]}"; do
    # The server bench runs the Hummingbird example: build it only when it is asked for.
    if [ "$name" = server ]; then
        swift build -c release --package-path Examples --product HummingbirdServer -Xcc -Werror -Xcc -Wall -Xcc -Wextra
        swift build -c release --package-path Examples --product HummingbirdServerBare -Xcc -Werror -Xcc -Wall -Xcc -Wextra
    fi
    # The memory bench runs the Vapor example in debug, as the end-to-end tests do.
    if [ "$name" = memory ]; then
        swift build --package-path Examples --product VaporServer -Xcc -Werror -Xcc -Wall -Xcc -Wextra
    fi
done

# Each bench starts on a quiet machine: the load the builds and the bench before left behind
# (64 spinning threads in detect) raised the next one's figures. Waits until the 1-minute load
# average is below BENCH_QUIET_LOAD (default 0.3), at most BENCH_QUIET_WAIT seconds (default 150);
# the load at each start is in the record either way.
wait_quiet() {
    local limit=${BENCH_QUIET_LOAD:-0.3} waited=0 most=${BENCH_QUIET_WAIT:-150}
    while [ "$waited" -lt "$most" ] && awk -v l="$limit" '{ exit !($1 >= l) }' /proc/loadavg; do
        sleep 5
        waited=$((waited + 5))
    done
    [ "$waited" -eq 0 ] || echo "   (waited ${waited} s for a quiet machine)"
}

mkdir -p docs/bench
for name in "${benches[@]}"; do
    wait_quiet
    var="BENCH_ARGS_${name//-/_}"
    read -r -a extra <<< "${!var:-}"
    echo "== bench $name ${extra[*]:-} (load $(cut -d' ' -f1-3 /proc/loadavg))"
    .build/release/bench "$name" "${extra[@]}" --json "docs/bench/$name.json"
done
python3 scripts/overhead-tables.py
