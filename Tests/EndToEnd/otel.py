#!/usr/bin/env python3
"""End-to-end: stalls reach an OpenTelemetry pipeline, each once, on the trace of the request that
stalled.

Starts a real OTLP/HTTP receiver (otlp_receiver.py: opentelemetry-proto's own definitions, strict
on unknown fields) and the Hummingbird example with OTEL_EXPORTER_OTLP_ENDPOINT pointing at it
(swift-otel bootstrapped for logs, traces and metrics). Injects stalls as traced requests, each
with a W3C `traceparent` of its own (a Swift CPU loop, OpenSSL's PBKDF2 and zlib in C libraries, a
handler asleep in a system call), stops the server with SIGTERM (its exporters flush), and checks
for every stall report the watchdog wrote:
  - exactly one `stallwatch.stall` log record and one `stallwatch.stall.ended` record with its
    report id, severity WARN, carrying the trace id of the request that stalled;
  - the stall on that request's trace: one `stallwatch.stall` span with its event;
  - every injected request accounted for by one report, none twice; no request rejected.
Prints the counts and "N passed, M failed"; exits non-zero on any failure.

Usage: otel.py BINARY [--rounds N]
"""
import argparse
import os
import random
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otlp_receiver  # noqa: E402
import servers  # noqa: E402

KINDS = ["cpu", "pbkdf2", "zlib", "sleep"]
STALL_MS = 1200
WARN = 13  # SeverityNumber SEVERITY_NUMBER_WARN


def stall_reports(directory):
    import json
    out = []
    for name in servers.stall_report_files(directory):
        with open(os.path.join(directory, name)) as f:
            out.append(json.load(f))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    check = servers.check

    receiver = otlp_receiver.Receiver()
    report_dir = tempfile.mkdtemp(prefix="stallwatch-otel-")
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_SERVICE_NAME": "stallwatch-otel-e2e",
        # Short batching delays (milliseconds): the check reads what arrived right after the stalls.
        "OTEL_BLRP_SCHEDULE_DELAY": "200", "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_METRIC_EXPORT_INTERVAL": "1000",
    }
    server = servers.Server(args.binary, report_dir, extra_env=env)
    injected = {}  # trace id -> kind
    try:
        if not check("otel: the server starts with OTLP export on", server.ready.wait(60), "\n".join(server.lines[-20:])):
            return 1
        for round_index in range(args.rounds):
            for kind in KINDS:
                trace = "%032x" % random.getrandbits(128)
                parent = "%016x" % random.getrandbits(64)
                status, body = server.fetch(f"/inject/{kind}?ms={STALL_MS}", timeout=30,
                                            headers={"traceparent": f"00-{trace}-{parent}-01"})
                check(f"otel: /inject/{kind} round {round_index} answers", status == 200, f"{status} {body[:200]}")
                injected[trace] = kind
                time.sleep(0.4)  # the stall's end is seen, its final report made
        time.sleep(1.0)
    finally:
        code = server.stop(timeout=30)
    check("otel: SIGTERM stops the server", code == 0, f"exit {code}; last lines: {server.lines[-10:]}")
    time.sleep(0.5)  # the last export's request may still be in the receiver's thread
    receiver.close()
    store = receiver.store
    reports = [r for r in stall_reports(report_dir) if r.get("loopName") == "cooperative-pool-job"]
    starts = [r for r in store.logs if r["attributes"].get("event.name") == "stallwatch.stall"]
    ends = [r for r in store.logs if r["attributes"].get("event.name") == "stallwatch.stall.ended"]
    stall_spans = [s for s in store.spans if s["name"] == "stallwatch.stall"]

    on_trace = twice = spans_ok = 0
    accounted = {}
    for report in reports:
        rid = report["id"]
        mine = [r for r in starts if r["attributes"].get("stallwatch.report_id") == rid]
        mine_end = [r for r in ends if r["attributes"].get("stallwatch.report_id") == rid]
        twice += len(mine) > 1 or len(mine_end) > 1
        trace = (report.get("request") or {}).get("traceID")
        if trace in injected:
            accounted.setdefault(trace, []).append(rid)
        right = (len(mine) == 1 and len(mine_end) == 1 and trace is not None
                 and all(r["trace_id"] == trace and r["severity_number"] == WARN for r in mine + mine_end))
        on_trace += right
        check(f"otel: report {rid} ({injected.get(trace, 'not injected')}): one record at the stall, one at its end, "
              f"WARN, on its request's trace", right,
              f"{len(mine)} + {len(mine_end)} records, traces {[r['trace_id'] for r in mine + mine_end]}, want {trace}")
        spans = [s for s in stall_spans if s["trace_id"] == trace
                 and s["attributes"].get("stallwatch.report_id") == rid]
        span_right = len(spans) == 1 and any(e["name"] == "stallwatch.stall" for e in spans[0]["events"])
        spans_ok += span_right
        check(f"otel: report {rid}: one stallwatch.stall span on the request's trace, with its event", span_right,
              f"{len(spans)} spans")
        if mine:
            check(f"otel: report {rid}: a readable body", " stalled " in str(mine[0]["body"]), str(mine[0]["body"]))
            print(f"       body: {mine[0]['body']}")
    missing = [t for t in injected if t not in accounted]
    doubled = [t for t, ids in accounted.items() if len(ids) > 1]
    check("otel: every injected stall has one report naming its request", not missing and not doubled,
          f"missing {[(t, injected[t]) for t in missing]}, twice {doubled}")
    on_disk = {r["id"] for r in stall_reports(report_dir)}
    strays = [r["attributes"].get("stallwatch.report_id") for r in starts + ends
              if r["attributes"].get("stallwatch.report_id") not in on_disk]
    check("otel: every stall record names a report on disk", not strays, str(strays[:5]))
    check("otel: the receiver rejected nothing (strict decoding)", not store.rejected, str(store.rejected[:3]))
    check("otel: Stallwatch's metrics arrived over OTLP", any(n.startswith("stallwatch") for n in store.metrics),
          str(sorted(store.metrics)[:10]))
    print(f"otel: {len(injected)} stalls injected, {len(reports)} pool-job reports, {len(starts)} stall records "
          f"and {len(ends)} end records ({on_trace} reports with both on the right trace, {twice} twice), "
          f"{len(stall_spans)} stall spans ({spans_ok} right), {len(store.spans)} spans, "
          f"{store.requests} OTLP requests, {len(store.rejected)} rejected", flush=True)
    shutil.rmtree(report_dir, ignore_errors=True)
    passed = sum(servers.results)
    failed = len(servers.results) - passed
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
