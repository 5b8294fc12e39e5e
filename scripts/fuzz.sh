#!/usr/bin/env bash
# Fuzzes the /proc parsers (C) and the report decoder (Swift) with libFuzzer from the Swift
# toolchain, FUZZ_SECONDS each (60 by default). Inputs that crashed are kept in Fuzz/crashes/ and
# replayed first on every run, so a fixed crash stays fixed. Seeds: Fuzz/corpus/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-60}"
out=.build-fuzz
mkdir -p "$out/proc" "$out/report" Fuzz/crashes
clang -g -O1 -fsanitize=fuzzer,address,undefined -ICSampler/include -ICSampler/src \
  -D_GNU_SOURCE Fuzz/proc_parsers_fuzz.c CSampler/src/proc_parse.c -o "$out/proc-fuzz"
swiftc -sanitize=fuzzer,address -parse-as-library -module-name ReportFuzz -package-name stallwatch -O \
  $(find Sources/StallwatchReport -name '*.swift') Fuzz/ReportDecoderFuzz.swift -o "$out/report-fuzz"
status=0
for target in proc report; do
  # Earlier crashes first: each must now pass.
  crashes=(Fuzz/crashes/"$target"-*)
  if [ -e "${crashes[0]}" ]; then "$out/$target-fuzz" "${crashes[@]}" || status=1; fi
  "$out/$target-fuzz" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="Fuzz/crashes/$target-" "$out/$target" "Fuzz/corpus/$target" 2>"$out/$target.log" || {
    status=1
    tail -40 "$out/$target.log"
  }
  grep -E "^(#[0-9]+|Done).*(DONE|cov:)" "$out/$target.log" | tail -1 | sed "s/^/fuzz $target: /" || true
done
exit "$status"
