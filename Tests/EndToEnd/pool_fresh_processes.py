#!/usr/bin/env python3
"""Pool stalls right after a process starts, counted over many fresh processes.

Runs `stallwatch demo` with each pool scenario N times (default 20), each run a new process, and
counts from the report files it writes:
  - pool-first-cpu / -blocked / -child / -async: the process's first cooperative-pool job stalls
    1.5 s; a run passes when exactly one `cooperative-pool-job` report names the stalling function.
  - pool-deadlock: one job more than the pool has workers waits on a semaphore for 3 s; a run passes
    when exactly one `cooperative-pool` report lists the blocked jobs, and no job thread has two
    `cooperative-pool-job` reports.
Prints "<scenario>: k/N" per scenario and each failed run's reason; exits 1 when any run failed.

    python3 Tests/EndToEnd/pool_fresh_processes.py .build/debug/stallwatch [--runs 20] [--scenarios a,b]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

FIRST_JOB = ["pool-first-cpu", "pool-first-blocked", "pool-first-child", "pool-first-async"]
# The function each first-job scenario stalls in (Sources/StallwatchCLI/DemoPoolScenario.swift).
FIRST_JOB_FUNCTIONS = ("demoComputeChecksums", "demoPool", "demoSleep")


def reports(directory):
    out = []
    for name in sorted(os.listdir(directory)):
        if name.startswith("sw-") and name.endswith(".json"):
            with open(os.path.join(directory, name)) as f:
                out.append(json.load(f))
    return [r for r in out if r.get("kind") == "stall"]


def blamed(report):
    return " <- ".join(frame.get("symbol") or "?" for frame in report.get("blamedStack", []))


def run_demo(binary, scenario, directory):
    if scenario in FIRST_JOB:
        args = ["--stall-seconds", "1.5", "--seconds", "3", "--pool-delay-ms", "0"]
    else:
        args = ["--stall-seconds", "3", "--seconds", "4.5", "--pool-delay-ms", "300"]
    command = [binary, "demo", "--threshold-ms", "500", "--scenario", scenario, "--report-dir", directory] + args
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr[-500:]}")


def judge(scenario, found):
    """None when the run passes, else why not."""
    if scenario in FIRST_JOB:
        jobs = [r for r in found if r.get("loopName") == "cooperative-pool-job"]
        if len(jobs) != 1:
            return f"{len(jobs)} cooperative-pool-job reports: {[blamed(r)[:120] for r in jobs]}"
        if not any(f in blamed(jobs[0]) for f in FIRST_JOB_FUNCTIONS):
            return f"blamed on {blamed(jobs[0])[:200]}"
        return None
    pool = [r for r in found if r.get("loopName") == "cooperative-pool"]
    if len(pool) != 1:
        return f"{len(pool)} cooperative-pool reports"
    listed = pool[0].get("poolJobs") or []
    if not listed:
        return "the cooperative-pool report lists no blocked job"
    threads = [r.get("thread", {}).get("id") for r in found if r.get("loopName") == "cooperative-pool-job"]
    if len(set(threads)) != len(threads):
        return f"a job reported twice (threads {threads})"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--scenarios", default=",".join(FIRST_JOB + ["pool-deadlock"]))
    args = parser.parse_args()
    failed = 0
    for scenario in args.scenarios.split(","):
        passed = 0
        for run in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="sw-pool-fresh-") as directory:
                run_demo(args.binary, scenario, directory)
                why = judge(scenario, reports(directory))
            if why is None:
                passed += 1
            else:
                print(f"  {scenario} run {run}: {why}", flush=True)
        failed += args.runs - passed
        print(f"{scenario}: {passed}/{args.runs}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
