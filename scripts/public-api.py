#!/usr/bin/env python3
"""Counts the package's public declarations, module by module, from symbol graphs
(`swift-symbolgraph-extract -minimum-access-level public`), and prints them.

Fails when a module meant for the package's own use (package access only) declares anything
public: StallwatchPolicy, StallwatchExport and BenchGoals are not a promise to users.

The graphs are extracted from the debug build's modules (`swift build` first), for these modules
only: `swift package dump-symbol-graph` built the package again and extracted every dependency,
261 s of a CI run; this takes about a second. Members the compiler synthesizes (Equatable's `!=`,
Codable's `init(from:)`) are not counted.

Usage: scripts/public-api.py
"""
import collections
import glob
import json
import os
import shutil
import subprocess
import sys

LIBRARY = ["Stallwatch", "StallwatchReport", "StallwatchNIO"]     # what users import
PACKAGE_ONLY = ["StallwatchPolicy", "StallwatchExport", "BenchGoals"]
KINDS = {"swift.struct": "types", "swift.enum": "types", "swift.class": "types", "swift.protocol": "types",
         "swift.typealias": "types", "swift.actor": "types", "swift.enum.case": "cases",
         "swift.property": "properties", "swift.type.property": "properties",
         "swift.method": "functions", "swift.type.method": "functions", "swift.func": "functions",
         "swift.init": "functions", "swift.func.op": "operators", "swift.subscript": "functions",
         "swift.var": "properties"}


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    bin_path = subprocess.run(["swift", "build", "--show-bin-path"], check=True, capture_output=True,
                              text=True).stdout.strip()
    if not os.path.isdir(os.path.join(bin_path, "Modules")):
        sys.exit(f"public-api: no built modules under {bin_path}: run swift build first")
    # Every C module a Swift module may import, as SwiftPM hands them to the compiler.
    module_maps = sorted(glob.glob(os.path.join(bin_path, "*.build", "module.modulemap"))
                         + glob.glob(".build/checkouts/*/Sources/*/include/module.modulemap")
                         + glob.glob(".build/checkouts/*/Sources/*/module.modulemap"))
    out = ".build/public-api-symbols"
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    triple = os.path.basename(os.path.dirname(bin_path))
    for module in LIBRARY + PACKAGE_ONLY:
        command = ["swift-symbolgraph-extract", "-module-name", module, "-target", triple,
                   "-I", os.path.join(bin_path, "Modules"),
                   "-module-cache-path", os.path.join(bin_path, "ModuleCache"),
                   "-minimum-access-level", "public", "-skip-synthesized-members", "-output-dir", out]
        for path in module_maps:
            command += ["-Xcc", f"-fmodule-map-file={path}"]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"public-api: FAIL, the symbol graph of {module} could not be extracted:\n"
                     f"{result.stderr.strip()}")
    graphs = glob.glob(os.path.join(out, "*.symbols.json"))
    # An extraction that succeeded without writing a module's graph would count it as empty.
    missing = [m for m in LIBRARY + PACKAGE_ONLY if not os.path.exists(os.path.join(out, f"{m}.symbols.json"))]
    if missing:
        sys.exit(f"public-api: FAIL, no symbol graph was written for {', '.join(missing)}")
    counts = {m: collections.Counter() for m in LIBRARY + PACKAGE_ONLY}
    for path in graphs:
        # Stallwatch@Swift.symbols.json holds Stallwatch's extensions of another module's types.
        module = os.path.basename(path).split(".symbols.json")[0].split("@")[0]
        if module not in counts:
            continue
        for symbol in json.load(open(path))["symbols"]:
            if symbol.get("accessLevel") in ("public", "open"):
                counts[module][KINDS.get(symbol["kind"]["identifier"], "other")] += 1
    columns = ["types", "cases", "properties", "functions", "operators", "other"]
    print(f"{'module':<18}" + "".join(f"{c:>11}" for c in columns) + f"{'total':>8}")
    for module in LIBRARY + PACKAGE_ONLY:
        c = counts[module]
        print(f"{module:<18}" + "".join(f"{c[k]:>11}" for k in columns) + f"{sum(c.values()):>8}")
    library_total = sum(sum(counts[m].values()) for m in LIBRARY)
    print(f"public declarations users can reach: {library_total}")
    leaks = [m for m in PACKAGE_ONLY if sum(counts[m].values())]
    if leaks:
        sys.exit(f"public-api: FAIL, public declarations in package-only modules: {', '.join(leaks)}")


if __name__ == "__main__":
    main()
