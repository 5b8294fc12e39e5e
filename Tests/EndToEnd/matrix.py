#!/usr/bin/env python3
"""The labelled fault-injection matrix: known stalls injected into real servers, every
report matched to the stall it belongs to.

Starts each example server (Examples/) on 127.0.0.1 with its reports in a fresh directory, then
asks its injection route (`/inject/<kind>?ms=N`; Vapor also `/inject-loop/<kind>`, a synchronous
route that runs on the event loop) for stalls of each kind at 0.7x, 1.2x, 1.5x and 3x the
threshold, in a shuffled order, at random phases (random idle gaps), the first one right after
the server listens, with light wrk load on `/` meanwhile. Each answer carries the blocking call's
own wall/monotonic start and end and the tid it ran on. Afterwards a run of full wrk load with no
injection counts false positives, the server is stopped (reports flushed) and every stall report is
matched to an injection: same thread and overlapping time (else overlapping time only, then the
loop is wrong), or to none (a false positive).

Then, on the servers whose injection routes run on the cooperative pool (hummingbird, vapor), the
classic pool deadlock (`/inject/pooldeadlock`): every pool worker blocked at once, a few times, in a
process of its own with no wrk load; each must get one `cooperative-pool` report listing the blocked
jobs and one `cooperative-pool-job` report per blocked job, none twice (POOL_DEADLOCK_GOALS).

Prints a confusion table per case (server, where, kind) and a PASS/MISS verdict per goal of the
issue's Acceptance list; writes everything as JSON (--json). Exit status: 2 on a structural
problem (a server that does not start or dies, an injection route that answers wrongly, a server
with no matched report at all); with --strict also 1 when any goal is a MISS, with --strict-counts
when a count goal is (COUNT_GOALS: what a loaded machine cannot break, unlike a timing); else 0.

Usage: matrix.py [--full] [--strict | --strict-counts] [--reps N] [--fp-seconds S] [--kinds K,...]
                 [--pool-deadlock-reps N] [--json PATH] NAME=BINARY ...
(NAME is hummingbird, nio or vapor; see scripts/stall-matrix.sh)
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

THRESHOLD_MS = 500
MULTIPLIERS = [0.7, 1.2, 1.5, 3.0]
TOLERANCE_MS = 50          # the Acceptance list's bound for start/duration error and event latency
CPU = {"cpuBound"}
# What each kind does to its thread, and the causes that say so truthfully.
KINDS = {
    "cpu": CPU, "json": CPU, "pbkdf2": CPU, "zlib": CPU, "sqlite": CPU, "regex": CPU, "qsort": CPU,
    "recursion": CPU, "future": CPU,
    "sleep": {"sleeping"},
    "semaphore": {"lockWait"}, "mutex": {"lockWait"}, "heldmutex": {"lockWait"},
    "socket": {"networkIO"},
    "pipe": {"networkIO", "blockedInSyscall"},   # a pipe is no socket: generic I/O wait is true too
    "fsync": {"diskIO"},
    "bigfile": {"diskIO", "cpuBound"},           # a fast virtual disk makes the copy the cost
    "bigread": {"cpuBound", "diskIO"},           # one read of a cached file: the kernel's copy
    "async1": CPU, "async3": CPU, "async5": CPU,  # computing under 1, 3, 5 suspended async callers
}
# Kinds whose stall lasts only about the time asked for (one system call sized by an estimated
# rate): judged by the length the injection measured, as a multiple of the threshold, instead.
UNTIMED_KINDS = {"bigread"}
# The function each kind must be blamed on (Examples/BlockingWork `injectionFunctions`).
FUNCTIONS = {
    "cpu": "blockOnCPU", "json": "encodeBigJSON", "pbkdf2": "hashPassword", "sleep": "blockInSleep",
    "semaphore": "waitOnSemaphore", "mutex": "blockOnLock", "socket": "blockOnSocketRead",
    "pipe": "blockOnPipeRead", "fsync": "fsyncStorm", "bigfile": "readBigFile", "bigread": "readFileInOneCall",
    "zlib": "compressWithZlib", "sqlite": "queryRecursiveSQLite", "regex": "matchWithRegex",
    "qsort": "sortWithCComparator", "recursion": "recurseThenCompute", "future": "computeInFutureChain",
    "heldmutex": "blockOnHeldLock",
}
# Lock waits whose lock records its holder: the injection answers with the holder's tid and the
# function it computes in, and the report must name both (its `lockWait.holder`). Lock waits on
# primitives with no owner: the report must say so (`lockWait.ownership` "noOwner").
HOLDER_KINDS = {"heldmutex"}
NO_OWNER_KINDS = {"semaphore"}
# Async-chain kinds: the computing function and then its async callers, innermost first, each of
# which suspended before calling the next: they are named only if the walk follows the task's
# async contexts (Examples/BlockingWork `asyncChainFunctions`).
ASYNC_LEVELS = ["chainRepository", "chainService", "chainRoute", "chainLevel4", "chainLevel5"]
ASYNC_CHAINS = {f"async{d}": ["computeUnderAsyncChain"] + ASYNC_LEVELS[:d] for d in (1, 3, 5)}
FUNCTIONS.update({kind: chain[0] for kind, chain in ASYNC_CHAINS.items()})
ASYNC = list(ASYNC_CHAINS)
COMMON = [k for k in KINDS if k != "future" and k not in ASYNC_CHAINS]
# Per server: (where the stall runs, route prefix, kinds). "pool" = a job on the cooperative pool.
TARGETS = {
    "hummingbird": [("pool", "/inject/", COMMON + ASYNC)],
    "nio": [("loop", "/inject/", COMMON + ["future"])],
    "vapor": [("pool", "/inject/", COMMON + ASYNC), ("loop", "/inject-loop/", COMMON)],
}


# Goals about counts: whether each stall was reported once, on its loop or job, naming its function
# and its cause. A slow or loaded machine moves timings, not these.
COUNT_GOALS = {"reported exactly once >= 99%", "right loop/job >= 99%", "injected function in blamed stack >= 99%",
               "right cause >= 95%"}


def named_in_order(functions, blamed):
    """Whether each of `functions` names a frame of `blamed`, in that order (innermost first)."""
    at = 0
    for function in functions:
        at = next((i for i in range(at, len(blamed)) if function in blamed[i]), None)
        if at is None:
            return False
        at += 1
    return True


def right_loop_name(where, loop):
    return loop == "cooperative-pool-job" if where == "pool" else loop.startswith("nio-loop-")


class Structural(Exception):
    """The harness cannot measure: not a verdict on Stallwatch."""


class Server:
    def __init__(self, name, binary, report_dir):
        self.name = name
        env = dict(os.environ, PORT="0", STALLWATCH_REPORT_DIR=report_dir, STALLWATCH_THRESHOLD_MS=str(THRESHOLD_MS))
        self.proc = subprocess.Popen([binary], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []          # (receipt wall ns, line)
        self.port = None
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.time_ns(), line.rstrip("\n")))
            if line.startswith("listening on 127.0.0.1:"):
                self.port = int(line.rsplit(":", 1)[1])
                self.ready.set()

    def stall_event_times(self):
        """report id -> wall ns at which its first stall event line reached us."""
        out = {}
        for t, line in list(self.lines):
            if line.startswith("{"):
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("event") == "stall" and event.get("id") and event["id"] not in out:
                    out[event["id"]] = t
        return out

    def get(self, path, timeout=30):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, response.read().decode("utf-8", "replace")
        finally:
            conn.close()

    def stop(self, timeout=20):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


def wrk(port, seconds, paced, script_dir):
    """wrk on `/` for `seconds`: paced = ~100 requests/s per connection (Lua delay), else flat out."""
    args = ["wrk", "-t1", "-c2" if paced else "-c4", f"-d{max(1, int(seconds))}s", "--timeout", "10s"]
    if paced:
        script = os.path.join(script_dir, "paced.lua")
        with open(script, "w") as f:
            f.write("function delay()\n  return 10\nend\n")
        args += ["-s", script]
    return subprocess.Popen(args + [f"http://127.0.0.1:{port}/"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def stop_process(proc, timeout=15):
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        return proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()[0]


def read_reports(directory, prefix=""):
    reports = []
    if not os.path.isdir(directory):
        return reports
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(directory, name)) as f:
                report = json.load(f)
        except (OSError, ValueError) as e:
            # Counted as missing (its stall reads as a miss); said, so a miss can be traced to it.
            print(f"matrix: cannot read report {prefix}{name}: {e}", file=sys.stderr, flush=True)
            continue
        report["_file"] = prefix + name
        reports.append(report)
    return reports


# A server process takes at most this many injections: the watchdog's default rate cap is 100
# reports per 24 h and its report directory keeps 200 files; beyond those, reports are (rightly)
# held back or evicted, which would read as misses. Each chunk gets a fresh process and directory.
CHUNK = int(os.environ.get("STALL_MATRIX_CHUNK", "90"))


def start_server(name, binary, directory):
    try:
        server = Server(name, binary, directory)
    except OSError as e:
        raise Structural(f"{name}: cannot start {binary}: {e}")
    deadline = time.monotonic() + 120
    while not server.ready.wait(0.2) and server.proc.poll() is None and time.monotonic() < deadline:
        pass
    if not server.ready.is_set():
        server.stop()
        raise Structural(f"{name}: no 'listening on' line (exit {server.proc.poll()}): {[l for _, l in server.lines[-5:]]}")
    return server


def get_json(server, name, path, timeout=None):
    """GET `path` on `server`: its JSON answer, or Structural (a failed request, a status other
    than 200, an answer that is no JSON)."""
    try:
        status, body = server.get(path) if timeout is None else server.get(path, timeout=timeout)
    except OSError as e:
        raise Structural(f"{name}: {path} failed: {e!r}; server exit {server.proc.poll()}")
    if status != 200:
        raise Structural(f"{name}: {path} answered {status}: {body[:200]}")
    try:
        return json.loads(body)
    except ValueError:
        raise Structural(f"{name}: {path} answered no JSON: {body[:200]}")


def run_server(name, binary, args, rng, work_dir):
    report_dir = os.path.join(work_dir, name, "reports")
    os.makedirs(os.path.dirname(report_dir), exist_ok=True)
    plan = []
    for where, prefix, kinds in TARGETS[name]:
        for kind in kinds:
            if args.kinds and kind not in args.kinds.split(","):
                continue
            for multiplier in MULTIPLIERS:
                for _ in range(args.reps):
                    plan.append((where, prefix, kind, multiplier))
    rng.shuffle(plan)
    print(f"matrix: {name}: {len(plan)} stalls, seed {args.seed}", flush=True)
    started = time.monotonic()
    injections, reports, event_times = [], [], {}
    chunks = [plan[i:i + CHUNK] for i in range(0, len(plan), CHUNK)] or [[]]
    for chunk_index, chunk in enumerate(chunks):
        last = chunk_index == len(chunks) - 1
        directory = report_dir if chunk_index == 0 else f"{report_dir}-{chunk_index}"
        prefix = "" if chunk_index == 0 else f"{chunk_index}/"
        server = start_server(name, binary, directory)
        load = None
        try:
            # Light load on other routes for the whole injection phase, sized to outlast it.
            load = wrk(server.port, len(chunk) * 4 + 60, True, os.path.dirname(report_dir))
            for position, (where, prefix_route, kind, multiplier) in enumerate(chunk):
                index = chunk_index * CHUNK + position
                if position > 0:  # random phase against the watchdog's rounds; the first comes at once
                    time.sleep(rng.uniform(0.3, 0.3 + THRESHOLD_MS / 1000))
                ms = int(round(THRESHOLD_MS * multiplier))
                answer = get_json(server, name, f"{prefix_route}{kind}?ms={ms}")
                answer.update(server=name, where=where, multiplier=multiplier, first=position == 0, index=index)
                if kind in UNTIMED_KINDS:
                    # Between 0.8x and 1.2x it is neither a stall nor clearly below one: left out.
                    answer.update(requestedMultiplier=multiplier,
                                  multiplier=(answer["monoEndNs"] - answer["monoStartNs"]) / 1e6 / THRESHOLD_MS)
                injections.append(answer)
                if args.verbose:
                    print(f"  {name} {where} {kind} {ms} ms on {answer['tid']} ({answer['thread']})", flush=True)
            stop_process(load)
            load = None
            time.sleep(3)   # reports of the last stall are final once it has been seen to end
            if last:
                before = {r["_file"] for r in read_reports(directory, prefix)}
                fp_start = time.time_ns()
                flat_out = wrk(server.port, args.fp_seconds, False, os.path.dirname(report_dir))
                # wrk ends on its own after -d; stop_process would interrupt it at once.
                try:
                    wrk_output = flat_out.communicate(timeout=args.fp_seconds + 30)[0]
                except subprocess.TimeoutExpired:
                    wrk_output = stop_process(flat_out)
                fp_seconds = (time.time_ns() - fp_start) / 1e9
                time.sleep(2)
                added = [r for r in read_reports(directory, prefix) if r["_file"] not in before]
                # Stall reports are false positives; process CPU reports (cpuHigh/cpuSustained) under
                # flat-out load are true ones, counted apart.
                fp_files = sorted(r["_file"] for r in added if r.get("kind") == "stall")
                other_files = sorted(r["_file"] for r in added if r.get("kind") != "stall")
            code = server.stop()
            if code is None:
                raise Structural(f"{name}: did not stop within 20 s of SIGTERM")
        finally:
            if load is not None:
                stop_process(load)
            server.stop()
        reports += read_reports(directory, prefix)
        event_times.update(server.stall_event_times())
    return {
        "server": name, "injections": injections, "reports": reports, "eventTimes": event_times,
        "noInjectionRun": {"seconds": round(fp_seconds), "startWallNs": fp_start, "reportFiles": fp_files,
                           "otherReportFiles": other_files,
                           "wrk": (wrk_output or "").strip().splitlines()[-3:]},
        "exitCode": code, "seconds": time.monotonic() - started,
    }


def match(run):
    """Each stall report to the injection it belongs to (or none): fills injection['reports']."""
    injections = run["injections"]
    for injection in injections:
        injection["reports"] = []
    unmatched = []
    slack = 100 * 1_000_000
    no_injection = set(run["noInjectionRun"]["reportFiles"])   # counted as false positives there
    for report in run["reports"]:
        if report.get("kind") != "stall" or report["_file"] in no_injection:
            continue
        start = report.get("startTimeUnixNanoseconds", 0)
        end = start + report.get("durationNanoseconds", 0)
        tid = (report.get("thread") or {}).get("id")
        overlapping = [i for i in injections if start <= i["wallEndNs"] + slack and end >= i["wallStartNs"] - slack]
        same_thread = [i for i in overlapping if i["tid"] == tid]
        candidates = same_thread or overlapping
        if not candidates:
            unmatched.append(report)
            continue
        best = min(candidates, key=lambda i: abs(i["wallStartNs"] - start))
        best["reports"].append(report)
    run["unmatched"] = unmatched


def evaluate(injection, event_times):
    reports = sorted(injection["reports"], key=lambda r: (r.get("sequenceInStall", 0), r.get("startTimeUnixNanoseconds", 0)))
    out = {"count": len(reports)}
    if not reports:
        return out
    first = reports[0]
    loop = first.get("loopName", "")
    out["loop"] = loop
    out["rightLoop"] = (first.get("thread") or {}).get("id") == injection["tid"] and right_loop_name(injection["where"], loop)
    cause = (first.get("cause") or {}).get("kind")
    out["cause"] = cause
    out["rightCause"] = cause in KINDS[injection["kind"]]
    blamed = [f.get("symbol") or "" for f in first.get("blamedStack", [])]
    out["functionPresent"] = named_in_order(ASYNC_CHAINS.get(injection["kind"], [FUNCTIONS[injection["kind"]]]), blamed)
    out["blamedTop"] = blamed[:4]
    out["startErrorMs"] = (first.get("startTimeUnixNanoseconds", 0) - injection["wallStartNs"]) / 1e6
    final = next((r for r in reports if r.get("durationIsFinal")), None)
    out["durationIsFinal"] = final is not None
    stored = (final or first).get("durationNanoseconds", 0)
    out["durationErrorMs"] = (stored - (injection["monoEndNs"] - injection["monoStartNs"])) / 1e6
    lock = first.get("lockWait") or {}
    if injection["kind"] in HOLDER_KINDS:
        holder = lock.get("holder") or {}
        symbols = [f.get("symbol") or "" for f in holder.get("frames", [])]
        out["holderNamed"] = ((holder.get("thread") or {}).get("id") == injection.get("holderTid")
                              and any(injection.get("holderFunction", "?") in s for s in symbols))
    if injection["kind"] in NO_OWNER_KINDS:
        out["noOwnerSaid"] = lock.get("ownership") == "noOwner"
    seen = [event_times[r["id"]] for r in reports if r.get("id") in event_times]
    if seen:
        out["latencyMs"] = (min(seen) - injection["wallStartNs"]) / 1e6
    return out


# The classic cooperative-pool deadlock (Examples/BlockingWork PoolDeadlockInjection.swift): as many
# jobs as the pool has workers, each waiting on one semaphore that a plain thread signals after
# POOL_DEADLOCK_MS. Only on servers whose /inject routes run on the pool and that watch the pool's
# ping; in processes of their own with no wrk load, as nothing else runs while the pool is blocked.
# Each injection must get one `cooperative-pool` report that lists every blocked job (poolJobs) and
# one `cooperative-pool-job` report per blocked job (none twice).
POOL_DEADLOCK = "pooldeadlock"
POOL_DEADLOCK_SERVERS = {"hummingbird", "vapor"}
POOL_DEADLOCK_MS = 3000
POOL_DEADLOCK_CAUSES = {"lockWait"}           # DispatchSemaphore.wait
POOL_DEADLOCK_FUNCTION = "waitForPoolGate"
POOL_REPORTS_PER_PROCESS = 90                 # below the watchdog's 100 reports per 24 h (see CHUNK)
POOL_GOAL = "pool deadlock: one cooperative-pool report listing its jobs >= 99%"
POOL_JOBS_GOAL = "pool deadlock: every blocked job reported exactly once >= 99%"
POOL_DEADLOCK_GOALS = {POOL_GOAL, POOL_JOBS_GOAL}
COUNT_GOALS |= POOL_DEADLOCK_GOALS   # counts as well: a loaded machine cannot break them


def run_pool_deadlock(name, binary, args, rng, work_dir):
    """`args.pool_deadlock_reps` pool deadlocks of POOL_DEADLOCK_MS each, one after another, each at
    a random phase; a fresh process (and report directory) whenever the next one could pass the
    watchdog's report cap."""
    base = os.path.join(work_dir, name, "pool-deadlock")
    print(f"matrix: {name}: {args.pool_deadlock_reps} pool deadlocks of {POOL_DEADLOCK_MS} ms", flush=True)
    started = time.monotonic()
    injections, reports, event_times, codes = [], [], {}, []
    process = 0
    while len(injections) < args.pool_deadlock_reps:
        directory = f"{base}-{process}"
        prefix = f"pool-deadlock-{process}/"
        server = start_server(name, binary, directory)
        budget = POOL_REPORTS_PER_PROCESS
        try:
            while len(injections) < args.pool_deadlock_reps:
                time.sleep(rng.uniform(0.3, 0.3 + THRESHOLD_MS / 1000))
                path = f"/inject/{POOL_DEADLOCK}?ms={POOL_DEADLOCK_MS}"
                answer = get_json(server, name, path, timeout=POOL_DEADLOCK_MS / 1000 + 30)
                try:
                    jobs = answer["jobs"]
                    starts, ends = [j["wallStartNs"] for j in jobs], [j["wallEndNs"] for j in jobs]
                except (KeyError, TypeError):
                    raise Structural(f"{name}: {path} answered no pool-deadlock JSON: {body[:200]}")
                if not jobs or len(jobs) != answer.get("width"):
                    raise Structural(f"{name}: {path} blocked {len(jobs)} jobs, not the pool's width {answer.get('width')}")
                answer.update(server=name, index=len(injections), process=process,
                              wallStartNs=min(starts), wallEndNs=max(ends))
                injections.append(answer)
                if args.verbose:
                    print(f"  {name} {POOL_DEADLOCK} {POOL_DEADLOCK_MS} ms on {[j['tid'] for j in jobs]}", flush=True)
                budget -= 1 + len(jobs)     # one pool report and one per job
                if budget < 1 + len(jobs):
                    break
            time.sleep(3)   # reports of the last stall are final once it has been seen to end
            code = server.stop()
            if code is None:
                raise Structural(f"{name}: did not stop within 20 s of SIGTERM")
            codes.append(code)
        finally:
            server.stop()
        reports += read_reports(directory, prefix)
        event_times.update(server.stall_event_times())
        process += 1
    return {"server": name, "injections": injections, "reports": reports, "eventTimes": event_times,
            "exitCodes": codes, "processes": process, "seconds": time.monotonic() - started}


def match_pool_deadlock(run):
    """Each stall report to the pool deadlock it overlaps: the pool's own (`cooperative-pool`) or a
    blocked job's (`cooperative-pool-job` on a job's tid), else 'other' there; overlapping none: unmatched."""
    slack = 100 * 1_000_000
    for injection in run["injections"]:
        injection["poolReports"], injection["jobReports"], injection["otherReports"] = [], {}, []
    unmatched = []
    for report in run["reports"]:
        if report.get("kind") != "stall":
            continue
        start = report.get("startTimeUnixNanoseconds", 0)
        end = start + report.get("durationNanoseconds", 0)
        overlapping = [i for i in run["injections"] if start <= i["wallEndNs"] + slack and end >= i["wallStartNs"] - slack]
        if not overlapping:
            unmatched.append(report)
            continue
        injection = min(overlapping, key=lambda i: abs(i["wallStartNs"] - start))
        tid = (report.get("thread") or {}).get("id")
        loop = report.get("loopName", "")
        if loop == "cooperative-pool":
            injection["poolReports"].append(report)
        elif loop == "cooperative-pool-job" and tid in {j["tid"] for j in injection["jobs"]}:
            injection["jobReports"].setdefault(tid, []).append(report)
        else:
            injection["otherReports"].append(report)
    run["unmatched"] = unmatched


def evaluate_pool_deadlock(injection):
    tids = [j["tid"] for j in injection["jobs"]]
    pool = injection["poolReports"]
    listed = [job for job in (pool[0].get("poolJobs") or []) if job] if pool else []
    listed_tids = {(job.get("thread") or {}).get("id") for job in listed}
    per_job = {tid: injection["jobReports"].get(tid, []) for tid in tids}
    firsts = [sorted(rs, key=lambda r: (r.get("sequenceInStall", 0), r.get("startTimeUnixNanoseconds", 0)))[0]
              for rs in per_job.values() if rs]
    own_ids = {tid: {r.get("id") for r in rs} for tid, rs in per_job.items()}
    out = {
        "poolCount": len(pool),
        "listed": len(listed),
        "listsAll": bool(pool) and set(tids) <= listed_tids,
        # Listed entries that point at their job's own report (PoolJobStack.reportID). A figure, no
        # goal: a pool report made before its jobs' own reports lists them with no reportID, also in
        # its final version (seen in 1 of 5 vapor deadlocks in a matrix run, 2 of 6 by hand).
        "listedWithOwnReport": sum(1 for job in listed if job.get("reportID")
                                   and job["reportID"] in own_ids.get((job.get("thread") or {}).get("id"), set())),
        "jobs": len(tids),
        "jobsOnce": sum(1 for rs in per_job.values() if len(rs) == 1),
        "jobsTwicePlus": sum(1 for rs in per_job.values() if len(rs) >= 2),
        "jobsMissed": sum(1 for rs in per_job.values() if not rs),
        "jobsRightCause": sum(1 for r in firsts if (r.get("cause") or {}).get("kind") in POOL_DEADLOCK_CAUSES),
        "jobsFunction": sum(1 for r in firsts
                            if any(POOL_DEADLOCK_FUNCTION in (f.get("symbol") or "") for f in r.get("blamedStack", []))),
        "jobCauses": sorted({(r.get("cause") or {}).get("kind") or "none" for r in firsts}),
        "other": len(injection["otherReports"]),
    }
    out["poolOk"] = out["poolCount"] == 1 and out["listsAll"]
    out["jobsOk"] = out["jobsOnce"] == len(tids)
    return out


def summarize_pool_deadlock(pool_runs):
    """One row per server, and the two count goals over every pool deadlock."""
    rows = []
    for run in pool_runs:
        evals = [i["eval"] for i in run["injections"]]
        rows.append({
            "server": run["server"], "n": len(evals), "width": sorted({i["width"] for i in run["injections"]}),
            "poolOnce": sum(1 for e in evals if e["poolCount"] == 1),
            "poolTwicePlus": sum(1 for e in evals if e["poolCount"] >= 2),
            "poolMissed": sum(1 for e in evals if e["poolCount"] == 0),
            "listsAll": sum(1 for e in evals if e["listsAll"]),
            "listedWithOwnReport": sum(e["listedWithOwnReport"] for e in evals),
            "jobs": sum(e["jobs"] for e in evals), "jobsOnce": sum(e["jobsOnce"] for e in evals),
            "jobsTwicePlus": sum(e["jobsTwicePlus"] for e in evals), "jobsMissed": sum(e["jobsMissed"] for e in evals),
            "jobsRightCause": sum(e["jobsRightCause"] for e in evals), "jobsFunction": sum(e["jobsFunction"] for e in evals),
            "jobCauses": sorted({c for e in evals for c in e["jobCauses"]}),
            "other": sum(e["other"] for e in evals), "unmatched": len(run["unmatched"]),
            "seconds": run["seconds"],
        })
    n = sum(r["n"] for r in rows)
    if not n:
        return rows, []
    pool_ok = sum(1 for run in pool_runs for i in run["injections"] if i["eval"]["poolOk"])
    jobs_ok = sum(1 for run in pool_runs for i in run["injections"] if i["eval"]["jobsOk"])
    twice = sum(r["jobsTwicePlus"] for r in rows)
    missed = sum(r["jobsMissed"] for r in rows)
    goals = [
        (POOL_GOAL, pool_ok / n >= 0.99, f"{pool_ok}/{n}"),
        (POOL_JOBS_GOAL, jobs_ok / n >= 0.99, f"{jobs_ok}/{n} ({missed} jobs missed, {twice} twice+)"),
    ]
    return rows, [{"goal": g, "pass": ok, "measured": m} for g, ok, m in goals]


def print_pool_deadlock(rows):
    if not rows:
        return
    header = (f"{'server':<14}{'n':>4}{'width':>7}{'pool1':>7}{'2+':>4}{'miss':>5}{'lists':>7}{'jobs':>6}{'once':>6}"
              f"{'2+':>4}{'miss':>5}{'cause':>7}{'fn':>5}{'ids':>5}{'other':>7}{'unm':>5}{'s':>6}  causes")
    print(f"\nPool deadlock: every cooperative-pool worker blocked {POOL_DEADLOCK_MS} ms at once, no load; pool1/2+/miss ="
          " cooperative-pool reports per deadlock, lists = it lists every blocked job, jobs = blocked jobs,"
          " once/2+/miss = their cooperative-pool-job reports, ids = listed jobs naming their own report")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['server']:<14}{r['n']:>4}{','.join(map(str, r['width'])):>7}{r['poolOnce']:>7}{r['poolTwicePlus']:>4}"
              f"{r['poolMissed']:>5}{r['listsAll']:>7}{r['jobs']:>6}{r['jobsOnce']:>6}{r['jobsTwicePlus']:>4}"
              f"{r['jobsMissed']:>5}{r['jobsRightCause']:>7}{r['jobsFunction']:>5}{r['listedWithOwnReport']:>5}"
              f"{r['other']:>7}{r['unmatched']:>5}{r['seconds']:>6.0f}  {','.join(r['jobCauses'])}")
    print(f"pool deadlock phase added {sum(r['seconds'] for r in rows):.0f} s "
          f"({', '.join('%s %.0f s' % (r['server'], r['seconds']) for r in rows)})")


def pct(values, p):
    """Nearest-rank percentile (p99 of fewer than 100 values is their maximum)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def fmt(value, width=6):
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.0f}"


def share(ok, n):
    return f"{ok}/{n}" if n else "-"


def summarize(cases, runs):
    """Table rows per case, plus the goal verdicts over all stalls."""
    rows = []
    above_all = []
    below_all = []
    for key in sorted(cases):
        entries = cases[key]
        above = [e for e in entries if e["multiplier"] >= 1.2]
        below = [e for e in entries if e["multiplier"] <= 0.8]
        above_all += above
        below_all += below
        got = [e["eval"] for e in above if e["eval"]["count"] > 0]
        rows.append({
            "case": "/".join(key), "n": len(above),
            "once": sum(1 for e in above if e["eval"]["count"] == 1),
            "twicePlus": sum(1 for e in above if e["eval"]["count"] >= 2),
            "missed": sum(1 for e in above if e["eval"]["count"] == 0),
            "rightLoop": sum(1 for g in got if g["rightLoop"]),
            "rightCause": sum(1 for g in got if g["rightCause"]),
            "function": sum(1 for g in got if g["functionPresent"]),
            "startP99": pct([abs(g["startErrorMs"]) for g in got], 99),
            "durationP99": pct([abs(g["durationErrorMs"]) for g in got], 99),
            "latencyP99": pct([g["latencyMs"] for g in got if "latencyMs" in g], 99),
            "below": len(below), "belowReported": sum(1 for e in below if e["eval"]["count"] > 0),
            "causes": sorted({g["cause"] or "none" for g in got}),
            "holderNamed": sum(1 for g in got if g.get("holderNamed")),
            "noOwnerSaid": sum(1 for g in got if g.get("noOwnerSaid")),
        })
    n = len(above_all)
    got = [e["eval"] for e in above_all if e["eval"]["count"] > 0]

    def ratio(ok):
        return ok / n if n else 0.0

    once = sum(1 for e in above_all if e["eval"]["count"] == 1)
    start99 = pct([abs(g["startErrorMs"]) for g in got], 99)
    duration99 = pct([abs(g["durationErrorMs"]) for g in got], 99)
    latencies = [e["eval"].get("latencyMs") for e in above_all]
    # A missed stall has no event: its latency counts as infinite, so misses cannot pass this goal.
    latency99 = pct([l if l is not None else float("inf") for l in latencies], 99)
    below_reported = sum(1 for e in below_all if e["eval"]["count"] > 0)
    unmatched = sum(len(r["unmatched"]) for r in runs)
    fp_files = sum(len(r["noInjectionRun"]["reportFiles"]) for r in runs)
    goals = [
        ("reported exactly once >= 99%", ratio(once) >= 0.99, f"{once}/{n} = {100 * ratio(once):.1f}%"),
        ("right loop/job >= 99%", ratio(sum(g["rightLoop"] for g in got)) >= 0.99,
         f"{sum(g['rightLoop'] for g in got)}/{n}"),
        ("injected function in blamed stack >= 99%", ratio(sum(g["functionPresent"] for g in got)) >= 0.99,
         f"{sum(g['functionPresent'] for g in got)}/{n}"),
        ("right cause >= 95%", ratio(sum(g["rightCause"] for g in got)) >= 0.95, f"{sum(g['rightCause'] for g in got)}/{n}"),
        (f"p99 |start error| <= {TOLERANCE_MS} ms", start99 is not None and start99 <= TOLERANCE_MS, f"{fmt(start99, 0)} ms"),
        (f"p99 |duration error| <= {TOLERANCE_MS} ms", duration99 is not None and duration99 <= TOLERANCE_MS, f"{fmt(duration99, 0)} ms"),
        (f"p99 event latency <= threshold + {TOLERANCE_MS} ms", latency99 is not None and latency99 <= THRESHOLD_MS + TOLERANCE_MS,
         f"{fmt(latency99, 0)} ms (threshold {THRESHOLD_MS} ms)"),
        ("stalls <= 0.8x threshold reported 0 times", below_reported == 0, f"{below_reported}/{len(below_all)} reported"),
        ("0 reports matching no injected stall", unmatched == 0, f"{unmatched}"),
        ("0 false positives under wrk with no injection", fp_files == 0,
         f"{fp_files} in {sum(r['noInjectionRun']['seconds'] for r in runs)} s"
         f" ({sum(len(r['noInjectionRun'].get('otherReportFiles', [])) for r in runs)} process CPU reports)"),
    ]
    # Lock goals only over the stalls that ran them (a --kinds subset may leave them out); a missed
    # stall counts against them.
    held = [e for e in above_all if e["kind"] in HOLDER_KINDS]
    if held:
        named = sum(1 for e in held if e["eval"].get("holderNamed"))
        goals.append(("mutex holder named (thread and function) >= 95%", named / len(held) >= 0.95, f"{named}/{len(held)}"))
    ownerless = [e for e in above_all if e["kind"] in NO_OWNER_KINDS]
    if ownerless:
        said = sum(1 for e in ownerless if e["eval"].get("noOwnerSaid"))
        goals.append(("semaphore wait says 'no owner' in every report", said == len(ownerless), f"{said}/{len(ownerless)}"))
    return rows, [{"goal": g, "pass": ok, "measured": m} for g, ok, m in goals]


def print_table(rows, goals, runs, pool_rows=()):
    if rows:
        print_cases(rows, runs)
    print_pool_deadlock(pool_rows)
    print("\nGoals (the matrix's acceptance list):")
    for g in goals:
        print(f"  {'PASS' if g['pass'] else 'MISS'}  {g['goal']:<50} {g['measured']}")


def print_cases(rows, runs):
    header = (f"{'case':<26}{'n':>4}{'once':>6}{'2+':>4}{'miss':>5}{'loop':>6}{'cause':>6}{'fn':>5}"
              f"{'|start|':>8}{'|dur|':>7}{'lat':>6}{'0.7x':>7}  causes")
    print("\nStall matrix: stalls >= 1.2x threshold; errors and latency are p99 in ms; 0.7x = reported/injected")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['case']:<26}{r['n']:>4}{r['once']:>6}{r['twicePlus']:>4}{r['missed']:>5}{r['rightLoop']:>6}"
              f"{r['rightCause']:>6}{r['function']:>5}{fmt(r['startP99'], 8)}{fmt(r['durationP99'], 7)}"
              f"{fmt(r['latencyP99'], 6)}{share(r['belowReported'], r['below']):>7}  {','.join(r['causes'])}")
    # Near the threshold is where stalls are lost: the same counts by requested length.
    for multiplier in MULTIPLIERS:
        entries = [i for run in runs for i in run["injections"] if i["multiplier"] == multiplier]
        counts = [i["eval"]["count"] for i in entries]
        print(f"{multiplier}x threshold ({int(THRESHOLD_MS * multiplier)} ms): {len(entries)} injected, "
              f"{sum(c == 1 for c in counts)} once, {sum(c >= 2 for c in counts)} twice+, {sum(c == 0 for c in counts)} missed")
    for run in runs:
        first = next((i for i in run["injections"] if i["first"]), None)
        if first:
            e = first["eval"]
            print(f"first stall after start, {run['server']} {first['where']} {first['kind']} {first['ms']} ms: "
                  f"{e['count']} report(s)" + (f", start error {e['startErrorMs']:.0f} ms" if e["count"] else ""))
        for report in run["unmatched"]:
            print(f"unmatched report {run['server']}: {report['_file']} loop={report.get('loopName')} "
                  f"cause={(report.get('cause') or {}).get('kind')} duration={report.get('durationNanoseconds', 0) / 1e6:.0f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("servers", nargs="+", metavar="NAME=BINARY")
    parser.add_argument("--full", action="store_true", help="8 stalls per case and multiplier, 600 s of wrk with no injection")
    parser.add_argument("--reps", type=int, help="stalls per case and multiplier (short form: 1, so each case runs 4 times)")
    parser.add_argument("--fp-seconds", type=int, help="seconds of flat-out wrk with no injection, per server")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any goal is a MISS")
    parser.add_argument("--strict-counts", action="store_true",
                        help="exit 1 when a count goal is a MISS (once, loop/job, function, cause); timing goals stay figures")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--json", default="stall-matrix-results.json")
    parser.add_argument("--kinds", help="comma-separated subset of kinds (a quick look at a few cases); "
                        f"{POOL_DEADLOCK} selects the pool-deadlock runs")
    parser.add_argument("--pool-deadlock-reps", type=int,
                        help=f"pool deadlocks per server ({', '.join(sorted(POOL_DEADLOCK_SERVERS))}); short form 5, full 32; 0: none")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    args.reps = args.reps or (8 if args.full else 1)
    args.fp_seconds = args.fp_seconds or (600 if args.full else 15)
    if args.pool_deadlock_reps is None:
        args.pool_deadlock_reps = 32 if args.full else 5
    kinds = args.kinds.split(",") if args.kinds else None
    run_cases = kinds is None or any(k != POOL_DEADLOCK for k in kinds)
    run_pool = (kinds is None or POOL_DEADLOCK in kinds) and args.pool_deadlock_reps > 0
    if shutil.which("wrk") is None:
        print("matrix: wrk is not installed (scripts/install-deps.sh)", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    pool_rng = random.Random(f"pool-deadlock-{args.seed}")   # the cases' plan for a seed stays as it was
    work_dir = tempfile.mkdtemp(prefix="stallwatch-matrix-")
    runs = []
    pool_runs = []
    structural = []
    began = time.monotonic()
    try:
        for spec in args.servers:
            name, binary = spec.split("=", 1)
            if name not in TARGETS:
                structural.append(f"unknown server {name}")
                continue
            if run_pool and name in POOL_DEADLOCK_SERVERS:
                try:
                    pool_run = run_pool_deadlock(name, binary, args, pool_rng, work_dir)
                except Structural as e:
                    structural.append(str(e))
                    print(f"matrix: STRUCTURAL {e}", flush=True)
                else:
                    match_pool_deadlock(pool_run)
                    for injection in pool_run["injections"]:
                        injection["eval"] = evaluate_pool_deadlock(injection)
                    print(f"matrix: {name}: {len(pool_run['injections'])} pool deadlocks, {len(pool_run['reports'])} report files,"
                          f" {pool_run['seconds']:.0f} s", flush=True)
                    pool_runs.append(pool_run)
            if not run_cases:
                continue
            try:
                run = run_server(name, binary, args, rng, work_dir)
            except Structural as e:
                structural.append(str(e))
                print(f"matrix: STRUCTURAL {e}", flush=True)
                continue
            match(run)
            for injection in run["injections"]:
                injection["eval"] = evaluate(injection, run["eventTimes"])
            if not any(i["eval"]["count"] for i in run["injections"]):
                structural.append(f"{name}: not one injected stall was reported (is the watchdog running?)")
            print(f"matrix: {name}: {len(run['injections'])} injected, {len(run['reports'])} report files, {run['seconds']:.0f} s", flush=True)
            runs.append(run)
        cases = {}
        for run in runs:
            for i in run["injections"]:
                cases.setdefault((run["server"], i["where"], i["kind"]), []).append(i)
        # The cases' goals only when cases ran (--kinds pooldeadlock runs none).
        rows, goals = summarize(cases, runs) if runs else ([], [])
        pool_rows, pool_goals = summarize_pool_deadlock(pool_runs)
        goals += pool_goals
        print_table(rows, goals, runs, pool_rows)
        for problem in structural:
            print(f"STRUCTURAL: {problem}")
        result = {
            "thresholdMs": THRESHOLD_MS, "multipliers": MULTIPLIERS, "reps": args.reps, "seed": args.seed,
            "full": args.full, "seconds": time.monotonic() - began, "rows": rows, "goals": goals, "structural": structural,
            "poolDeadlock": {
                "ms": POOL_DEADLOCK_MS, "reps": args.pool_deadlock_reps, "rows": pool_rows,
                "seconds": sum(r["seconds"] for r in pool_runs),
                "runs": [{
                    "server": r["server"], "seconds": r["seconds"], "exitCodes": r["exitCodes"], "processes": r["processes"],
                    "unmatched": [rep["_file"] for rep in r["unmatched"]],
                    "injections": [{k: v for k, v in i.items() if k not in ("poolReports", "jobReports", "otherReports")}
                                   | {"poolReportFiles": [rep["_file"] for rep in i["poolReports"]],
                                      "jobReportFiles": {str(t): [rep["_file"] for rep in rs] for t, rs in i["jobReports"].items()},
                                      "otherReportFiles": [rep["_file"] for rep in i["otherReports"]]}
                                   for i in r["injections"]],
                } for r in pool_runs],
            },
            "runs": [{
                "server": r["server"], "seconds": r["seconds"], "exitCode": r["exitCode"], "noInjectionRun": r["noInjectionRun"],
                "unmatched": [{k: rep.get(k) for k in ("_file", "loopName", "startTimeUnixNanoseconds", "durationNanoseconds", "cause")}
                              for rep in r["unmatched"]],
                "injections": [{k: v for k, v in i.items() if k != "reports"} | {"reportFiles": [rep["_file"] for rep in i["reports"]]}
                               for i in r["injections"]],
            } for r in runs],
        }
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        print(f"matrix: results in {args.json} ({time.monotonic() - began:.0f} s)")
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
        # The sparse file the servers' bigread injections share (BlockingWork readFileInOneCall).
        try:
            os.unlink(os.path.join(tempfile.gettempdir(), f"stallwatch-bigread-{os.getuid()}"))
        except OSError:
            pass
    if structural:
        return 2
    if args.strict and not all(g["pass"] for g in goals):
        return 1
    if args.strict_counts and not all(g["pass"] for g in goals if g["goal"] in COUNT_GOALS):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
