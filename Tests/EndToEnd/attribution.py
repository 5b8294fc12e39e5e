#!/usr/bin/env python3
"""End-to-end: a stall report names the request that stalled, among concurrent requests.

Starts an example server with its in-memory tracer (STALLWATCH_EXAMPLE_TRACER=memory, a test aid)
and, per round, fires 32 concurrent requests over 127.0.0.1, each with its own trace id (the
in-memory tracer's propagation headers): 31 that wait without holding a thread (GET /wait) and one
whose handler blocks its thread (GET /block/KIND, cpu unless --kind says). A round passes when the stall's final report
names that request (route /block/{kind} in Hummingbird, method GET, its trace id) and no other, and the tracer
holds a finished `stallwatch.stall` span on that trace with a `stallwatch.stall` event.

Prints one line per round and "attribution: N/ROUNDS" (NAME); exits non-zero unless every round
passed.

--kind picks the blocking handler (default cpu). A handler blocked in a system call from its start
(sleep, lock, socket) is never signalled: its request is read by the watchdog from the blocked
thread's task, from outside (CSampler/src/blocked_task.c), and must pass just the same.

Usage: attribution.py NAME=BINARY ... [--rounds N] [--kind cpu|sleep|lock|socket]   (see scripts/e2e-servers.sh)
"""
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import servers  # noqa: E402  (the Server class both scripts drive)

THRESHOLD_MS = 500
BLOCK_MS = 1200
WAIT_MS = 900
CONCURRENT = 32
# Each framework spells a route pattern its own way.
ROUTE = {"hummingbird": "/block/{kind}", "vapor": "/block/:kind"}


def Server(binary, report_dir):
    """The example server with its test-aid in-memory tracer on (servers.py's Server)."""
    return servers.Server(binary, report_dir, extra_env={"STALLWATCH_EXAMPLE_TRACER": "memory"})


def stall_reports(directory):
    out = {}
    for name in os.listdir(directory):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(directory, name)) as f:
                report = json.load(f)
        except (OSError, ValueError):
            continue  # being rewritten
        if report.get("kind") == "stall":
            out[report["id"]] = report
    return out


def one_round(server, report_dir, round_index, route, kind="cpu"):
    blocker = random.randrange(CONCURRENT)
    traces = [f"r{round_index}q{i}{random.randrange(1 << 30):08x}" for i in range(CONCURRENT)]
    before = set(stall_reports(report_dir))
    statuses = [None] * CONCURRENT

    def send(i):
        headers = {"in-memory-trace-id": traces[i], "in-memory-span-id": f"client{i}"}
        path = f"/block/{kind}?ms={BLOCK_MS}" if i == blocker else f"/wait?ms={WAIT_MS}"
        try:
            statuses[i] = server.fetch(path, timeout=20, headers=headers)[0]
        except OSError as e:
            statuses[i] = str(e)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(CONCURRENT)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if any(s != 200 for s in statuses):
        return False, f"statuses {statuses}"
    want = traces[blocker]
    deadline = time.monotonic() + 6
    problem = "no final stall report"
    while time.monotonic() < deadline:
        new = [r for rid, r in stall_reports(report_dir).items() if rid not in before]
        final = [r for r in new if r.get("durationIsFinal")]
        if final and len(final) == len(new):
            requests = [r.get("request") for r in final]
            named = [q for q in requests if q and q.get("traceID") == want]
            wrong = [q for q in requests if q and q.get("traceID") != want]
            if wrong:
                return False, f"charged another request: {wrong} (blocker {want})"
            if len(named) != 1 or named[0].get("route") != route or named[0].get("method") != "GET":
                problem = f"reports' requests {requests}, want GET {route} trace {want}"
            else:
                status, body = server.fetch("/debug/spans", timeout=20)
                spans = json.loads(body) if status == 200 else []
                on_trace = [s for s in spans if s["operation"] == "stallwatch.stall" and s["traceID"] == want]
                if len(on_trace) == 1 and any(e["name"] == "stallwatch.stall" for e in on_trace[0]["events"]):
                    others = [s for s in spans if s["operation"] == "stallwatch.stall" and s["traceID"] in traces
                              and s["traceID"] != want]
                    if others:
                        return False, f"stall span on other traces: {[s['traceID'] for s in others]}"
                    return True, f"report {final[0]['id']} {named[0]['method']} {named[0]['route']} trace {want}"
                problem = f"no stallwatch.stall span on trace {want} ({len(on_trace)} found)"
        time.sleep(0.2)
    return False, problem


def run(name, binary, rounds, kind):
    report_dir = tempfile.mkdtemp(prefix=f"stallwatch-attr-{name}-")
    server = Server(binary, report_dir)
    passed = 0
    try:
        if not server.ready.wait(60):
            print(f"FAIL {name}: server did not start: {server.lines[-5:]}", flush=True)
            return 0
        for r in range(rounds):
            ok, detail = one_round(server, report_dir, r, ROUTE[name], kind)
            passed += ok
            print(("PASS " if ok else "FAIL ") + f"{name} round {r + 1}: {detail}", flush=True)
            time.sleep(0.3)
    finally:
        server.stop()
        shutil.rmtree(report_dir, ignore_errors=True)
    print(f"attribution: {passed}/{rounds} ({name}, /block/{kind})", flush=True)
    return passed


def main():
    args = sys.argv[1:]
    rounds, kind = 20, "cpu"
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    if "--kind" in args:  # cpu (default), sleep, lock, socket: which blocking handler stalls
        i = args.index("--kind")
        kind = args[i + 1]
        del args[i:i + 2]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    ok = True
    for arg in args:
        name, binary = arg.split("=", 1)
        ok &= run(name, binary, rounds, kind) == rounds
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
