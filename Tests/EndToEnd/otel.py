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
  - every injected request accounted for by one report, none twice; no request rejected;
  - one OTLP profile per report (Stallwatch's OTLPProfileExporter), decoded strictly with the
    official definitions: its samples are the report's call tree, its link the request's trace.
  - every sample has its time, and its profile's samples carry it;
  - each profile's most sampled function is `go tool pprof -top`'s first row for
    `stallwatch pprof` of the same report file, over the same number of samples.
Then the profile exporter against a receiver that is slow (3 s), sheds load (503 with Retry-After)
and is down (a refused port): the service answers every request, the failures are `error` events
and counted in `stallwatch_export_failures_total`, memory stays bounded (printed), and every stall
either arrives or is named as dropped.
Prints the counts and "N passed, M failed"; exits non-zero on any failure.

Usage: otel.py BINARY [--rounds N] [--cli PATH (default: .build/debug/stallwatch)]
"""
import argparse
import collections
import json
import os
import re
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otlp_profile_check  # noqa: E402
import otlp_receiver  # noqa: E402
import servers  # noqa: E402

KINDS = ["cpu", "pbkdf2", "zlib", "sleep"]
STALL_MS = 1200
WARN = 13  # SeverityNumber SEVERITY_NUMBER_WARN


def read_report(directory, name):
    with open(os.path.join(directory, name)) as f:
        return json.load(f)


def stall_reports(directory):
    return [read_report(directory, name) for name in servers.stall_report_files(directory)]


def profiles_by_report(store):
    """{report id: [trace id of its profile's samples' link, one per profile]}."""
    out = collections.defaultdict(list)
    for request in store.profiles:
        d = request.dictionary
        strings = list(d.string_table)
        attrs = [(strings[a.key_strindex], otlp_receiver.any_value(a.value)) for a in d.attribute_table]
        for rp in request.resource_profiles:
            for sp in rp.scope_profiles:
                for profile in sp.profiles:
                    facts = dict(attrs[i] for i in profile.attribute_indices)
                    links = {d.link_table[s.link_index].trace_id.hex() for s in profile.samples if s.link_index}
                    out[facts.get("stallwatch.report_id")].append(next(iter(links), None))
    return out


def pprof_top(cli, path):
    """(`go tool pprof -top`'s first function, its total samples) for `stallwatch pprof` of the report
    file at `path`; raises with what failed."""
    scratch = tempfile.mkdtemp(prefix="stallwatch-otel-pprof-")
    try:
        out = os.path.join(scratch, "stall.pb.gz")
        subprocess.run([cli, "pprof", path, "-o", out], check=True, capture_output=True, timeout=60)
        env = dict(os.environ, HOME=scratch, GOCACHE=os.path.join(scratch, "cache"), PPROF_TMPDIR=scratch)
        top = subprocess.run(["go", "tool", "pprof", "-symbolize=none", "-top", "-nodecount=1000", "-nodefraction=0", out],
                             check=True, capture_output=True, text=True, timeout=120, env=env).stdout
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    total = re.search(r"Total samples = (\d+)", top)
    # A row: flat flat% sum% cum cum% name (the name may hold spaces).
    rows = [line.split(None, 5) for line in top.splitlines() if re.match(r"\s*\d+\s+[\d.]+%", line)]
    if not total or not rows:
        raise RuntimeError(f"no rows in go tool pprof -top: {top[:300]}")
    return rows[0][5], int(total.group(1))


def check_pprof_tops(cli, report_dir, store):
    """Each report's profile and `stallwatch pprof` of its file agree: go's top function is one of
    the profile's most sampled leaves, over the same sample count."""
    leaves = {}
    for body in store.profile_bodies:
        leaves.update(otlp_profile_check.leaf_counts(body))
    agreed, problems = 0, []
    for name in servers.stall_report_files(report_dir):
        rid = read_report(report_dir, name)["id"]
        counts = leaves.get(rid)
        if not counts:
            problems.append(f"{rid}: no profile")
            continue
        try:
            top, total = pprof_top(cli, os.path.join(report_dir, name))
        except (OSError, subprocess.SubprocessError, RuntimeError) as e:
            problems.append(f"{rid}: stallwatch pprof / go tool pprof failed: {e}")
            continue
        most = max(counts.values())
        if counts.get(top) != most or total != sum(counts.values()):
            problems.append(f"{rid}: go's top {top!r} of {total} vs the profile's {counts.most_common(2)} of {sum(counts.values())}")
        else:
            agreed += 1
    print(f"otel: go tool pprof -top agrees with the OTLP profile for {agreed} reports", flush=True)
    servers.check("otel: each profile's top function is go tool pprof -top's for stallwatch pprof of its report",
                  not problems and agreed > 0, "; ".join(problems[:3]))


# The exporter's timeout while the receiver is down (see the check on the first try's failure).
DOWN_TIMEOUT_MS = 15000


def export_error_line(line):
    """Whether a server's output line is an `error` event about a profile export."""
    if not line.startswith("{"):
        return False
    try:
        event = json.loads(line)
    except ValueError:
        return False
    return event.get("event") == "error" and "profile" in event.get("message", "")


def faults(binary):
    """The exporter against a slow, load-shedding, then absent receiver."""
    check = servers.check
    # Profiles requests: 0 answered after 3 s, 1 and 2 with 503 Retry-After 1, 3 taken with one
    # profile rejected (a partial success), the rest accepted.
    schedule = {0: (200, None, 3.0), 1: (503, 1, 0), 2: (503, 1, 0), 3: ("partial", None, 0)}
    receiver = otlp_receiver.Receiver(fault=lambda n: schedule.get(n, (200, None, 0)))
    for phase, endpoint in (("slow and shedding", receiver.endpoint + "/v1development/profiles"),
                            ("down", "http://127.0.0.1:9/v1development/profiles")):
        report_dir = tempfile.mkdtemp(prefix="stallwatch-otel-faults-")
        # Profiles only (swift-otel stays off): the faults are the exporter's to meet.
        # Down: a 15 s timeout, so that a try failed only at its timeout cannot pass for one failed
        # at once, however loaded the machine (the slow phase's 3 s answer needs more than 3 s).
        timeout_ms = DOWN_TIMEOUT_MS if phase == "down" else 5000
        env = {"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_TIMEOUT": str(timeout_ms)}
        server = servers.Server(binary, report_dir, extra_env=env)
        try:
            if not check(f"otel faults ({phase}): the server starts", server.ready.wait(60), "\n".join(server.lines[-20:])):
                continue
            rss = [servers.resident_kib(server.proc.pid)]
            answered = 0
            first_answered = None
            for i, kind in enumerate(["cpu", "zlib", "cpu", "pbkdf2"]):
                status, _ = server.fetch(f"/inject/{kind}?ms={STALL_MS}", timeout=30)
                first_answered = first_answered or time.monotonic()
                answered += status == 200
                answered += server.get("/metrics") == 200
                time.sleep(0.5)
                rss.append(servers.resident_kib(server.proc.pid))
            check(f"otel faults ({phase}): every request answered while the receiver fails", answered == 8, f"{answered}/8")
            time.sleep(4.0 if phase == "down" else 8.0)
            _, metrics = server.fetch("/metrics")
            failures = sum(float(m) for m in re.findall(r'^stallwatch_export_failures_total\{[^}]*\} ([0-9.e+]+)$', metrics, re.M))
        finally:
            code = server.stop(timeout=40)
        check(f"otel faults ({phase}): SIGTERM stops the server", code == 0, f"exit {code}; {server.lines[-5:]}")
        reports = {r["id"] for r in stall_reports(report_dir)}
        errors = [e.get("message", "") for e in server.events("error")]
        export_errors = [m for m in errors if "profile" in m]
        dropped = {rid for m in export_errors if "dropped" in m for rid in reports if rid in m}
        arrived = set(profiles_by_report(receiver.store)) & reports
        print(f"otel faults ({phase}): {len(reports)} reports, {len(arrived)} profiles arrived, {len(dropped)} named "
              f"as dropped, {len(export_errors)} export error events, {failures:.0f} failures counted, "
              f"RSS {min(rss)}–{max(rss)} KiB", flush=True)
        for m in export_errors[:4]:
            print(f"       {m}")
        check(f"otel faults ({phase}): the failures are error events and counted", bool(export_errors) and failures >= 1,
              f"{len(export_errors)} events, counter {failures}")
        check(f"otel faults ({phase}): every stall arrived or is named as dropped", bool(reports) and reports <= arrived | dropped,
              f"neither: {sorted(reports - arrived - dropped)}")
        if phase == "down":
            check("otel faults (down): nothing arrived", not arrived, str(arrived))
            check("otel faults (down): the error events say the connection was refused",
                  any("refused" in m.lower() for m in export_errors), str(export_errors[:4]))
            # A refused connection fails a try at once: the first stall's export error comes well
            # within the timeout of its request's answer (1.0 s here; 6.0 s at a 5 s timeout with
            # the HTTP client's own connection retries, when one try fitted in this phase). The
            # bound is the timeout less 5 s: a try that waited for its timeout cannot meet it.
            failed_at = next((t for t, line in zip(server.line_times, server.lines) if export_error_line(line)), None)
            after = None if failed_at is None or first_answered is None else failed_at - first_answered
            print(f"otel faults (down): the first export error came {after if after is None else round(after, 2)} s "
                  f"after the first stalled request's answer", flush=True)
            check("otel faults (down): the first try fails at once, not after the timeout",
                  after is not None and after < DOWN_TIMEOUT_MS / 1000 - 5,
                  f"{after if after is None else round(after, 2)} s after the answer")
        else:
            check("otel faults (slow and shedding): every stall arrived in the end", reports <= arrived,
                  f"missing {sorted(reports - arrived)}; faults {receiver.store.faults}")
            check("otel faults (slow and shedding): a 503's body is in its error event",
                  any("HTTP 503: shedding load" in m for m in export_errors), str(export_errors[:4]))
            check("otel faults (slow and shedding): a partial success's rejection is an error event",
                  any("rejected 1 of" in m and "profile too old" in m for m in export_errors),
                  f"{export_errors[:6]}; faults {receiver.store.faults}")
        shutil.rmtree(report_dir, ignore_errors=True)
    receiver.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cli", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../.build/debug/stallwatch"))
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
    loop_stalls = 0
    try:
        if not check("otel: the server starts with OTLP export on", server.ready.wait(60), "\n".join(server.lines[-20:])):
            return 1
        # A handler blocked in a system call is never signalled: its request is read from outside,
        # through offsets learnt from the first requests served (BlockedRequestTags). Served first,
        # a few plain requests finish that; without them the first `sleep` stall went unnamed in 2
        # of 5 runs once the profile exporter's task shared the pool.
        warm = [threading.Thread(target=server.fetch, args=("/wait?ms=20",)) for _ in range(8)]
        for t in warm:
            t.start()
        for t in warm:
            t.join()
        for round_index in range(args.rounds):
            for kind in KINDS:
                trace = "%032x" % random.getrandbits(128)
                parent = "%016x" % random.getrandbits(64)
                status, body = server.fetch(f"/inject/{kind}?ms={STALL_MS}", timeout=30,
                                            headers={"traceparent": f"00-{trace}-{parent}-01"})
                check(f"otel: /inject/{kind} round {round_index} answers", status == 200, f"{status} {body[:200]}")
                injected[trace] = kind
                time.sleep(0.4)  # the stall's end is seen, its final report made
            # An event loop's stall (no request's task runs there: no trace, but records and a profile).
            status, body = server.fetch(f"/inject-loop/zlib?ms={STALL_MS}", timeout=30)
            check(f"otel: /inject-loop/zlib round {round_index} answers", status == 200, f"{status} {body[:200]}")
            loop_stalls += 1
            time.sleep(0.4)
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
    loop_reports = [r for r in stall_reports(report_dir) if r.get("loopName") != "cooperative-pool-job"]
    for report in loop_reports:
        rid = report["id"]
        n = (sum(r["attributes"].get("stallwatch.report_id") == rid for r in starts),
             sum(r["attributes"].get("stallwatch.report_id") == rid for r in ends))
        check(f"otel: event-loop report {rid} ({report.get('loopName')}): one record at the stall, one at its end",
              n == (1, 1), f"{n[0]} + {n[1]} records")
    check("otel: every event-loop stall has a report", len(loop_reports) == loop_stalls,
          f"{len(loop_reports)} reports for {loop_stalls} stalls")
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
    profiled = profiles_by_report(store)
    problems = [p for body in store.profile_bodies for p in otlp_profile_check.check(body)]
    check("otel: every profile decodes strictly and holds its report's stacks and trace link", not problems,
          "; ".join(problems[:3]))
    for report in stall_reports(report_dir):
        rid = report["id"]
        trace = (report.get("request") or {}).get("traceID")
        links = profiled.get(rid, [])
        check(f"otel: report {rid}: one profile, linked to its request's trace", len(links) == 1
              and (trace is None or links[0] == trace), f"{len(links)} profiles, links {links}, want {trace}")
    untimed = {r["id"]: r["sampleCount"] - sum(len(n.get("sampleOffsetsNanoseconds") or []) for n in r["callTree"])
               for r in stall_reports(report_dir)}
    check("otel: every report sample has its time (so its profile's samples have timestamps)",
          not any(untimed.values()), str({k: v for k, v in untimed.items() if v}))
    check_pprof_tops(args.cli, report_dir, store)
    print(f"otel: {len(store.profile_bodies)} profile requests, {sum(len(v) for v in profiled.values())} profiles "
          f"for {len(stall_reports(report_dir))} reports", flush=True)
    print(f"otel: {len(injected)} stalls injected, {len(reports)} pool-job reports, {len(starts)} stall records "
          f"and {len(ends)} end records ({on_trace} reports with both on the right trace, {twice} twice), "
          f"{len(stall_spans)} stall spans ({spans_ok} right), {len(store.spans)} spans, "
          f"{store.requests} OTLP requests, {len(store.rejected)} rejected", flush=True)
    shutil.rmtree(report_dir, ignore_errors=True)
    faults(args.binary)
    passed = sum(servers.results)
    failed = len(servers.results) - passed
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
