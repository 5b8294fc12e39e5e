#!/usr/bin/env python3
"""Counts the package's public declarations, module by module, from the symbol graphs SwiftPM
emits (`swift package dump-symbol-graph --minimum-access-level public`), and prints them.

Fails when a module meant for the package's own use (package access only) declares anything
public: StallwatchPolicy, StallwatchExport and BenchGoals are not a promise to users.

Usage: scripts/public-api.py [--no-dump]   (--no-dump reads the graphs of an earlier dump)
"""
import collections
import glob
import json
import os
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
    if "--no-dump" not in sys.argv:
        subprocess.run(["swift", "package", "dump-symbol-graph", "--minimum-access-level", "public",
                        "--skip-synthesized-members"], check=True, stdout=subprocess.DEVNULL)
    graphs = glob.glob(".build/*/symbolgraph/*.symbols.json")
    if not graphs:
        sys.exit("public-api: no symbol graphs under .build/*/symbolgraph")
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
