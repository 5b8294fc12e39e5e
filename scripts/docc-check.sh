#!/usr/bin/env bash
# The DocC catalogs (Sources/*/*.docc) compiled with every warning an error: every link resolves.
# Symbol graphs come from the modules the debug build already made (swift-symbolgraph-extract),
# not from `swift package generate-documentation`: that plugin, like `swift package
# dump-symbol-graph`, builds every dependency whatever the package traits say (async-http-client
# and BoringSSL: minutes of a CI run), while the modules documented here are built already.
set -euo pipefail
cd "$(dirname "$0")/.."
modules=.build/debug/Modules
[[ -d $modules ]] || { echo "docc-check: $modules is missing: run swift build first" >&2; exit 2; }
triple=$(swift -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["target"]["triple"])')
# C modules' headers: the package's own and its dependencies'.
flags=()
while IFS= read -r dir; do flags+=(-Xcc "-I$dir"); done < <(find -L Sources .build/checkouts -type d -name include -not -path '*/Tests/*' -not -path '*/.build/checkouts/*/.build/*')
while IFS= read -r map; do flags+=(-Xcc "-fmodule-map-file=$map"); done < <(find .build/debug/ -maxdepth 2 -name module.modulemap)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for target in "$@"; do
  mkdir -p "$work/$target/graphs"
  swift-symbolgraph-extract -module-name "$target" -I "$modules" -target "$triple" -minimum-access-level public \
    -emit-extension-block-symbols -output-dir "$work/$target/graphs" "${flags[@]}"
  if docc convert "Sources/$target/$target.docc" --additional-symbol-graph-dir "$work/$target/graphs" \
       --fallback-display-name "$target" --fallback-bundle-identifier "$target" \
       --output-path "$work/$target/archive" --warnings-as-errors; then
    echo "docc-check: $target: no warning"
  else
    echo "docc-check: $target: FAILED (above)"
    status=1
  fi
done
exit $status
