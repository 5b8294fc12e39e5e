#!/usr/bin/env bash
# Fuzzes the /proc parsers (C) and the report decoder (Swift) with libFuzzer from the Swift
# toolchain, FUZZ_SECONDS each (60 by default). Inputs that crashed are kept in Fuzz/crashes/ and
# replayed first on every run, so a fixed crash stays fixed. Seeds: Fuzz/corpus/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
out=.build-fuzz
mkdir -p "$out/proc" "$out/report" Fuzz/crashes
# The two fuzzers are built, and then run, side by side: each is one process on one core (libFuzzer
# without -jobs), the machine has two, so each still gets its FUZZ_SECONDS of a whole core and the
# step takes one FUZZ_SECONDS instead of two.
clang -g -O1 -fsanitize=fuzzer,address,undefined -ICSampler/include -ICSampler/src \
  -D_GNU_SOURCE Fuzz/proc_parsers_fuzz.c CSampler/src/proc_parse.c -o "$out/proc-fuzz" &
build_proc=$!
swiftc -sanitize=fuzzer,address -parse-as-library -module-name ReportFuzz -package-name stallwatch -O \
  $(find Sources/StallwatchReport -name '*.swift') Fuzz/ReportDecoderFuzz.swift -o "$out/report-fuzz"
wait "$build_proc"
# One target: earlier crashes first (each must now pass), then FUZZ_SECONDS of fuzzing. Its output
# goes to $out/$target.log and its verdict to $out/$target.status, printed below in a fixed order.
fuzz_one() {
  local target=$1 rc=0
  local crashes=(Fuzz/crashes/"$target"-*)
  : > "$out/$target.replay.log"
  if [ -e "${crashes[0]}" ]; then "$out/$target-fuzz" "${crashes[@]}" > "$out/$target.replay.log" 2>&1 || rc=$((rc | 1)); fi
  "$out/$target-fuzz" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="Fuzz/crashes/$target-" "$out/$target" "Fuzz/corpus/$target" 2>"$out/$target.log" || rc=$((rc | 2))
  echo "$rc" > "$out/$target.status"
}
pids=()
for target in proc report; do
  fuzz_one "$target" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || true; done
status=0
for target in proc report; do
  rc=$(cat "$out/$target.status" 2>/dev/null || echo 3)
  # rc: bit 1 an earlier crash fails again, bit 2 the fuzzing failed (3 also when it never finished).
  if (( rc & 1 )); then status=1; echo "fuzz $target: an earlier crash fails again:"; tail -40 "$out/$target.replay.log"; fi
  if (( rc & 2 )); then status=1; tail -40 "$out/$target.log"; fi
  grep -E "^(#[0-9]+|Done).*(DONE|cov:)" "$out/$target.log" | tail -1 | sed "s/^/fuzz $target: /" || true
done
exit "$status"
