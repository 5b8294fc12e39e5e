#!/usr/bin/env python3
"""Builds every benchmark figure the documentation shows from the benches' own JSON files.

Reads each docs/bench/*.json (a BenchRecord, written by `bench <name> --json FILE`: bench, command,
machine, loadAtStart, loadAtEnd, seconds, goals, figures) and
  - writes docs/benchmarks.md entirely: per bench, when, where and how it ran, its goals table and
    its key figures;
  - rewrites the part of README.md between `<!-- overhead-tables:begin -->` and
    `<!-- overhead-tables:end -->`: one row per goal across the benches.
No figure is typed by hand: a number in either file comes from a JSON file, so the documentation
cannot drift from what the code measured.

  python3 scripts/overhead-tables.py           regenerate both files
  python3 scripts/overhead-tables.py --check   exit 1 (with a diff) when either differs from the JSON

Any bench name is handled; the benches below get a table of their own figures besides the goals,
any other bench a list of its top-level figures. Standard library only.
"""
import argparse
import difflib
import glob
import json
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
RECORDS = "docs/bench"
BENCHMARKS_MD = "docs/benchmarks.md"
README = "README.md"
BEGIN = "<!-- overhead-tables:begin -->"
END = "<!-- overhead-tables:end -->"
REGENERATE = "python3 scripts/overhead-tables.py"
# The order benches appear in; any other bench follows, by name.
ORDER = ["sampler", "probe", "detect", "server", "memory"]


def num(v, digits=None):
    """A figure as printed: whole numbers plainly, others with precision that suits their size.
    Non-finite values arrive as strings ("nan", "inf"): shown as they are."""
    if v is None:
        return "not measured"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, str):
        return "—" if v == "nan" else v
    if isinstance(v, int):
        return str(v)
    if digits is not None:
        return f"{v:.{digits}f}"
    if v == int(v) and abs(v) < 1e9:
        return str(int(v))
    a = abs(v)
    if a >= 100:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    if a >= 0.01:
        return f"{v:.3f}"
    if a >= 0.0001:
        return f"{v:.4f}"
    return f"{v:.2g}"


def spread(s, digits=None):
    """A Spread (median [min…max]) as printed."""
    if not isinstance(s, dict) or "median" not in s:
        return num(s, digits)
    return f"{num(s['median'], digits)} [{num(s.get('min'), digits)}…{num(s.get('max'), digits)}]"


def percent(share):
    """A share (0…1) as a whole percentage."""
    return f"{share * 100:.0f} %" if isinstance(share, (int, float)) else num(share)


def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out


def load_records(root):
    records = []
    for path in sorted(glob.glob(os.path.join(root, RECORDS, "*.json"))):
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        missing = [k for k in ("bench", "command", "machine", "loadAtStart", "loadAtEnd", "seconds", "goals", "figures")
                   if k not in record]
        if missing:
            sys.exit(f"{os.path.relpath(path, root)}: not a BenchRecord (missing {', '.join(missing)}); "
                     "write it with `bench <name> --json FILE`")
        record["_file"] = os.path.relpath(path, root)
        records.append(record)
    rank = {name: i for i, name in enumerate(ORDER)}
    records.sort(key=lambda r: (rank.get(r["bench"], len(ORDER)), r["bench"], r["_file"]))
    return records


def when(record):
    """The run's start as `YYYY-MM-DD HH:MM UTC` (the machine's date is ISO 8601, UTC)."""
    date = record["machine"].get("date", "?")
    return date.replace("T", " ")[:16] + " UTC" if "T" in date else date


def machine(record):
    m = record["machine"]
    return (f"{m.get('cpuModel', '?')}, {m.get('logicalCPUs', '?')} logical CPUs, "
            f"{m.get('numaNodes', '?')} NUMA node(s), Linux {m.get('kernel', '?')}")


def natural(key):
    """Sort key that orders `latency500ms` before `latency2000ms`."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", key)]


def goal_rows(record):
    for key in sorted(record["goals"], key=natural):
        g = record["goals"][key]
        yield key, g


# Each known bench's own figures, as a table; they return lines of Markdown.

def sampler_figures(f):
    lines = [f"Interval {num(f.get('intervalMilliseconds'))} ms, depth {num(f.get('depth'))}, "
             f"{num(f.get('threads'))} thread(s), {num(f.get('rounds'))} rounds of {num(f.get('phaseSeconds'))} s, "
             f"working set {num(f.get('workingSetMiB', 0))} MiB; typical iteration {num(f.get('typicalIterationNanoseconds'))} ns; "
             f"without sampling {num(f.get('offGapsPerSecond'))} gaps/s (median {num(f.get('offGapMedianMicroseconds'))} µs): "
             "the VM's own interruptions.", ""]
    rows = []
    for r in f.get("rows", []):
        rows.append([r["label"], spread(r["samplesPerSecond"], 1),
                     f"{num(r['stolenPerSampleGapMedianMicroseconds'], 2)} / {num(r['stolenPerSampleGapP99Microseconds'], 2)}",
                     f"{num(r['stolenTailMedianMicroseconds'], 2)}",
                     spread(r["totalCostPercentOfCore"], 4), spread(r.get("totalCostFromMedianPercentOfCore"), 4),
                     num(r["handlerMedianMicroseconds"], 2), num(r.get("systemCallsPerSample"), 3) if r.get("systemCallsPerSample") is not None else "—",
                     "—" if r["label"].startswith("gperftools") else str(r["processMallocsDuringSampling"] + r["samplerThreadMallocs"])])
    lines += table(["mode", "samples/s", "stolen µs p50 / p99 (gap)", "tail µs p50", "total % of a core (gap, per round)",
                    "p50 × rate % of a core", "handler µs p50", "system calls / sample", "mallocs"], rows)
    paths = f.get("unwindPaths", [])
    if paths:
        lines += ["", "Unwind paths (timer ring; handler = its wall time around the capture, CLOCK_MONOTONIC: a preemption inside it counts):", ""]
        lines += table(["path", "samples", "handler µs p50 / p99", "frames p50", "whole stacks"],
                       [[p["path"], num(p["samples"]), f"{num(p['handlerP50Microseconds'], 2)} / {num(p['handlerP99Microseconds'], 2)}",
                         num(p["framesMedian"]),
                         # the bare walk (the records read with no checks) does not judge a stack whole
                         "—" if p["path"].startswith("bare") else percent(p["wholeShare"])] for p in paths])
    drivers = f.get("driverComparisons", [])
    if drivers:
        lines += ["", "Drivers (stolen per sample ÷ the timer ring's, per round):", ""]
        lines += table(["driver", "÷ timer/fp", "÷ timer/empty"],
                       [[d["label"], spread(d["ratioToTimer"], 2), spread(d["ratioToTimerFloor"], 2)] for d in drivers])
    w = f.get("watchdogStall")
    if w:
        lines += ["", f"Mallocs on the watchdog thread during one {num(w.get('stallMilliseconds'))} ms stall "
                      f"({num(w.get('thresholdMilliseconds'))} ms threshold): {num(w.get('beforeDetection'))} from suspicion to the "
                      f"first report, {num(w.get('whileStalled'))} while stalled, {num(w.get('finalReport'))} for the final report; "
                      f"{num(w.get('processWide'))} in the whole process."]
    return lines


def probe_figures(f):
    lines = [f"Heartbeat pair: {spread(f.get('pairNanoseconds'), 1)} ns over {num(f.get('rounds'))} rounds of {num(f.get('pairs'))} pairs."]
    if f.get("addedAnonymousKiB") is not None:
        lines.append(f"Memory added by the default configuration: {num(f['addedAnonymousKiB'])} KiB private (RssAnon), "
                     f"plus {num(f.get('addedFileKiB'))} KiB of shared code pages (RssFile).")
    def idle_table(title, watched, not_watched):
        rounds = [("watched (default)", r) for r in watched] + [("not watched", r) for r in not_watched]
        if not rounds:
            return []
        out = ["", title, ""]
        out += table(["pool jobs", "% of a core", "wake-ups/s", "pool scans/s", "pool wakes/s", "/proc reads/s", "pool threads", "load"],
                     [[label, num(r["cpuPercent"], 4), num(r["wakeupsPerSecond"], 1), num(r["scansPerSecond"], 1),
                       num(r.get("poolWakesPerSecond"), 1) if r.get("poolWakesPerSecond") is not None else "—",
                       num(r["procReadsPerSecond"], 1), num(r["poolThreads"]), r["load"]] for label, r in rounds])
        return out
    lines += idle_table(f"Idle watchdog, {num(f.get('idleRoundSeconds'))} s rounds (alternating; a burst of tasks every "
                        f"{num(f.get('poolTaskIntervalMilliseconds'))} ms keeps pool threads alive; the goal's figure):",
                        f.get("idleWatchingPoolJobs", []), f.get("idleNotWatchingPoolJobs", []))
    if f.get("busyPoolIntervalMilliseconds"):
        lines += idle_table(f"The same with the pool given work every {num(f['busyPoolIntervalMilliseconds'])} ms "
                            f"(it never rests; no goal):",
                            f.get("busyPoolWatchingPoolJobs") or [], f.get("busyPoolNotWatchingPoolJobs") or [])
    return lines


def detect_figures(f):
    lines = table(["threshold ms", "latency ms median [min…max]", "stalls missed"],
                  [[num(t["thresholdMilliseconds"]), spread(t["latency"], 1), num(t["missed"])] for t in f.get("thresholds", [])])
    cases = f.get("manyLoops", [])
    if cases:
        lines += ["", "Many loops (latency from each loop's busy() to its stall event; watchdog CPU per stalled loop):", ""]
        lines += table(["loops", "stalled", "kind", "threshold ms", "p50 / p99 / max ms", "reported / missed / duplicates",
                        "watchdog late ms (max)", "bare nice -10 sleeper late ms p99 / max", "watchdog % of a core per loop",
                        "samples/s per loop"],
                       [[num(c["setup"]["loops"]), num(c["setup"]["stalled"]), c["setup"]["kind"], num(c["setup"]["thresholdMilliseconds"]),
                         f"{num(c['result']['latencyP50Milliseconds'], 1)} / {num(c['result']['latencyP99Milliseconds'], 1)} / {num(c['result']['latencyMaxMilliseconds'], 1)}",
                         f"{num(c['result']['reported'])} / {num(c['result']['missed'])} / {num(c['result']['duplicates'])}",
                         num(c["result"]["worstLatenessMilliseconds"], 1),
                         (f"{num(c['result']['bareWakeLatenessP99Milliseconds'], 1)} / {num(c['result']['bareWakeLatenessMaxMilliseconds'], 1)}"
                          if c["result"].get("bareWakeLatenessP99Milliseconds") is not None else "—"),
                         num(c["result"]["watchdogCPUPercentPerStalledLoop"], 4),
                         num(c["result"]["samplesPerSecondPerLoop"], 2)] for c in cases])
    return lines


def server_figures(f):
    rows = []
    for r in f.get("runs", []):
        idle = r.get("idle") or {}
        rows.append([num(r["round"]), "on" if r["watchdog"] else "off", num(r["wrk"]["requestsPerSecond"], 0),
                     num(r["wrk"]["latencyP99Milliseconds"], 2), num(r["serverCPUMicrosecondsPerRequest"], 1),
                     num(r.get("watchdogCPUPercentOfCore"), 4) if r["watchdog"] else "—",
                     num(idle.get("loopWakeupsPerSecond"), 2) if idle else "—",
                     num(idle.get("poolWakeupsPerSecond"), 2) if idle else "—", num(r["stallEvents"])])
    return table(["round", "watchdog", "req/s", "p99 ms", "server CPU µs/request", "watchdog thread % of a core",
                  "idle loop wake-ups/s (all loops)", "idle pool wake-ups/s", "stalls reported"], rows)


def generic_figures(f):
    """Any other bench: its top-level figures, numbers and spreads; nested lists and objects are in its JSON."""
    if not isinstance(f, dict):
        return [f"`{json.dumps(f)}`"]
    rows = [[key, spread(value)] for key, value in sorted(f.items())
            if isinstance(value, (int, float, str, bool)) or (isinstance(value, dict) and "median" in value)]
    return table(["figure", "value"], rows) if rows else []


def wake_floor_figures(f):
    """bench wake-floor: a thread that only wakes up, per period (the watchdog's idle floor), and one
    that reads what a pool scan must after each burst of pool work (the idle service's floor)."""
    def reads(r):
        return f"a pool scan's reads ({r.get('poolWorkers', 0)} workers)" if r.get("poolScanReads") else "none"
    rows = [[f"{r['periodMilliseconds']} ms", reads(r), num(r["wakeupsPerSecond"], 1), spread(r["microsecondsPerWake"], 1),
             spread(r["percentOfCore"], 4)] for r in f]
    return table(["wake every", "reads per wake-up", "wake-ups/s", "CPU per wake-up, µs median [min…max]", "% of a core"], rows)


def allocations_figures(f):
    """bench allocations: the watchdog thread's mallocs, idle and through one sampled stall, per round."""
    rows = [[str(i + 1), f"{r['idleMallocs']} in {r['idleRounds']} rounds", str(r["beforeDetection"]), str(r["whileStalled"]),
             str(r["finalReport"]), str(r["processWide"])] for i, r in enumerate(f["rounds"])]
    return table(["round", "idle", "start → first report", "while stalled", "final report", "process-wide"], rows)


FIGURES = {"sampler": sampler_figures, "probe": probe_figures, "detect": detect_figures, "server": server_figures,
           "wake-floor": wake_floor_figures, "allocations": allocations_figures}


def benchmarks_md(records):
    out = [f"<!-- Generated by scripts/overhead-tables.py from docs/bench/*.json; do not edit. Regenerate: {REGENERATE} -->",
           "",
           "# Benchmark figures",
           "",
           "Generated from the JSON files in `docs/bench/` (each written by `bench <name> --json FILE`; "
           "`scripts/bench-all.sh` runs the benches and regenerates this file and the README's goals table). "
           "Every figure below is as measured in that run, on a shared 2-vCPU VM unless the machine line says "
           "otherwise: read the load average beside it. A MISS is a goal this run did not meet (or did not "
           "measure); it never changes a bench's exit status.",
           ""]
    if not records:
        out += ["No bench has written a record yet.", ""]
    for r in records:
        passed = sum(1 for g in r["goals"].values() if g["pass"])
        out += [f"## bench {r['bench']}", "",
                f"- Run: {when(r)} (`{r['_file']}`), {num(r['seconds'], 1)} s",
                f"- Machine: {machine(r)}",
                f"- Load average (1, 5, 15 min): {r['loadAtStart']} at the start, {r['loadAtEnd']} at the end",
                f"- Command: `{r['command']}`",
                f"- Goals met: {passed} of {len(r['goals'])}",
                ""]
        out += table(["goal", "figure", "verdict", "held to", "what it is"],
                     [[f"`{key}`", num(g.get("value")), "PASS" if g["pass"] else "**MISS**", g["goal"], g["detail"]]
                      for key, g in goal_rows(r)])
        figures = FIGURES.get(r["bench"], generic_figures)(r["figures"])
        if figures:
            out += ["", "### Figures", ""] + figures
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def readme_section(records):
    out = [BEGIN,
           f"<!-- Generated by scripts/overhead-tables.py from docs/bench/*.json; do not edit. Regenerate: {REGENERATE} -->",
           "",
           "Every goal of every bench, from the last recorded run of each (`docs/bench/*.json`); the command, "
           "the machine and every figure behind them are in [docs/benchmarks.md](docs/benchmarks.md).",
           ""]
    rows = []
    for r in records:
        run = f"{when(r)}, load {r['loadAtStart'].split(' ')[0]} → {r['loadAtEnd'].split(' ')[0]}"
        for key, g in goal_rows(r):
            rows.append([f"`{r['bench']}`", f"`{key}` {g['goal']}", num(g.get("value")),
                         "PASS" if g["pass"] else "**MISS**", run])
    out += table(["bench", "goal", "figure", "verdict", "run (load at start → end)"], rows) if rows else ["No bench has written a record yet."]
    out += ["", END]
    return "\n".join(out)


def readme(text, records):
    begin, end = text.find(BEGIN), text.find(END)
    if begin < 0 or end < begin:
        sys.exit(f"{README}: the markers {BEGIN} … {END} are missing")
    return text[:begin] + readme_section(records) + text[end + len(END):]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when README.md or docs/benchmarks.md differ from the JSON files")
    parser.add_argument("--root", default=ROOT, help="the repository (default: this script's)")
    args = parser.parse_args()
    records = load_records(args.root)
    readme_path, md_path = os.path.join(args.root, README), os.path.join(args.root, BENCHMARKS_MD)
    with open(readme_path, encoding="utf-8") as f:
        current_readme = f.read()
    current_md = open(md_path, encoding="utf-8").read() if os.path.exists(md_path) else ""
    wanted = {README: (current_readme, readme(current_readme, records)), BENCHMARKS_MD: (current_md, benchmarks_md(records))}
    if args.check:
        stale = [name for name, (have, want) in wanted.items() if have != want]
        for name in stale:
            have, want = wanted[name]
            sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), want.splitlines(True), f"{name} (as committed)",
                                                       f"{name} (from {RECORDS}/*.json)"))
        if stale:
            print(f"\n{', '.join(stale)}: out of date with {RECORDS}/*.json; run {REGENERATE} and commit the result")
            return 1
        print(f"{README} and {BENCHMARKS_MD} match {len(records)} record(s) in {RECORDS}/")
        return 0
    for name, (have, want) in wanted.items():
        if have != want:
            with open(os.path.join(args.root, name), "w", encoding="utf-8") as f:
                f.write(want)
            print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
