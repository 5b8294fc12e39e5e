#!/usr/bin/env bash
# Makes the README's flame graph: a real lock-wait stall from `stallwatch demo`, drawn by
# `stallwatch flame`, rendered by headless Chromium. Writes docs/lock-stall.svg and docs/lock-stall.png.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --product stallwatch
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
.build/debug/stallwatch demo --scenario lock --stall-seconds 1.5 --seconds 3 --report-dir "$dir/reports" >/dev/null
reports=("$dir"/reports/*.json)
[ -e "${reports[0]}" ] || { echo "flame-screenshot: the demo wrote no report" >&2; exit 1; }
.build/debug/stallwatch flame -o docs/lock-stall.svg "${reports[@]}"
HOME="$dir" chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$dir/profile" \
  --window-size=1200,220 --screenshot="$PWD/docs/lock-stall.png" "file://$PWD/docs/lock-stall.svg" 2>/dev/null
echo "wrote docs/lock-stall.svg and docs/lock-stall.png from ${reports[*]##*/}"
