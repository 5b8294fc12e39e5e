#!/usr/bin/env bash
# ThreadSanitizer over the Swift tests (not part of .ci/run: a third full build). Prints the number
# of ThreadSanitizer reports and the tests that failed. Skipped, as under ASan: the timing-based
# suites and the stress run (TSan makes everything 5-15x slower). Expect the checks of exact frame
# shapes to fail: TSan's runtime frames (__tsan_func_entry, its interceptors) sit between the
# caller and the callee the tests look for. A data race shows as a "WARNING: ThreadSanitizer" block.
set -uo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests --scratch-path .build-tsan -Xswiftc -sanitize=thread -Xcc -fsanitize=thread 2>&1 | tail -1
log=$(mktemp)
TSAN_OPTIONS=halt_on_error=0 swift test --skip-build --scratch-path .build-tsan --no-parallel \
  --skip 'WatchdogEndToEndTests|WatchdogDeliveryTests|PoolJobTests|BusyLoopTests|SignalOwnershipTests/takenOver|blockedInRead|variedCodeWalksToTheRoot|EpisodeTests|ForeignLibraryStallTests|TickTimerTests|StressTests' \
  >"$log" 2>&1
echo "ThreadSanitizer reports: $(grep -c 'WARNING: ThreadSanitizer' "$log")"
grep -E '^✘ Test .* failed after' "$log" || true
grep -E 'Test run with' "$log"
grep -A30 'WARNING: ThreadSanitizer' "$log" | head -200
