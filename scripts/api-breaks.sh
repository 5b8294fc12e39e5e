#!/usr/bin/env bash
# Fails on an unannounced source break of the library products against the last release.
# Usage: scripts/api-breaks.sh [build flags, e.g. -Xcc -Werror]
#
# The last release is the newest `v*` tag when the clone has tags, else the tag and commit named in
# api/baseline (a clone without tags still knows what was released). A break that a release means
# to make is announced in api/breaks-allowed.txt, one line per break as the API digester prints it
# (`swift package diagnose-api-breaking-changes --help`, --breakage-allowlist-path); the list is
# emptied when the next release is tagged.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r tag commit < api/baseline
if newest=$(git describe --tags --abbrev=0 --match 'v*' 2>/dev/null); then
  tag=$newest
  commit=$(git rev-list -n 1 "$newest")
fi
git cat-file -e "$commit^{commit}" 2>/dev/null || { echo "api-breaks: FAIL, the baseline $tag ($commit) is not in this clone" >&2; exit 1; }
echo "api-breaks: the library products against $tag ($commit)"
# Arguments are build flags for `swift package` (test.sh passes its own): the current tree is then
# built as the test command's build left it, and only the baseline is compiled (95 s instead of 149 s
# in a fresh-clone CI run, where different flags rebuilt the whole package first).
swift package "$@" diagnose-api-breaking-changes "$commit" --products Stallwatch StallwatchNIO \
  --breakage-allowlist-path api/breaks-allowed.txt
