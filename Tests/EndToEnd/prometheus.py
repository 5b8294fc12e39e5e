#!/usr/bin/env python3
"""End-to-end: Stallwatch's swift-metrics figures seen by a real Prometheus server.

Starts the Hummingbird example (which exports /metrics with swift-prometheus) and Debian's
`prometheus` scraping it every second, provokes two stalls (a lock wait and a sleep in route handlers), and
asks Prometheus' own HTTP query API for the stall counter with its `loop` and `cause` labels, the
stall-duration and loop-lag histograms, and the process figures. Also checks that every
`stallwatch_*` metric the server exports is in the README's metrics table. Stops what it started.

Usage: prometheus.py HUMMINGBIRD_BINARY README
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from servers import Server, check, results  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(port, expr):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"query {expr}: {body}")
    return body["data"]["result"]


def wait_for(predicate, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception:  # noqa: BLE001 - Prometheus not up yet, or no data yet
            pass
        time.sleep(0.5)
    return None


def readme_metric_names(readme):
    with open(readme) as f:
        text = f.read()
    return set(re.findall(r"^\| `(stallwatch_[a-z_]+)`", text, flags=re.M))


def exported_families(text):
    names = set()
    for line in text.splitlines():
        m = re.match(r"# TYPE (stallwatch_[a-z_]+) ", line)
        if m:
            names.add(m.group(1))
    return names


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, readme = sys.argv[1], sys.argv[2]
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        sys.exit("prometheus is not installed (apt-get install prometheus; scripts/install-deps.sh does it)")
    work = tempfile.mkdtemp(prefix="stallwatch-prom-")
    server = Server(binary, os.path.join(work, "reports"))
    prom = None
    try:
        if not check("hummingbird: started", server.ready.wait(60)):
            return
        prom_port = free_port()
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: stallwatch-example\n"
                    f"    static_configs:\n      - targets: ['127.0.0.1:{server.port}']\n")
        prom = subprocess.Popen([prometheus, f"--config.file={config}", f"--storage.tsdb.path={work}/tsdb",
                                 f"--web.listen-address=127.0.0.1:{prom_port}"],
                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prometheus.log"), "w"))
        up = wait_for(lambda: [r for r in query(prom_port, "up") if r["value"][1] == "1"], 60)
        if not check("prometheus: scrapes the example's /metrics", bool(up), f"see {work}/prometheus.log"):
            return
        for kind in ("lock", "sleep"):  # blocked causes: a CPU stall reads as "starved" on a loaded machine
            ended = len(server.events("stallEnded"))
            status = server.get(f"/block/{kind}?ms=1500")
            check(f"hummingbird: /block/{kind} answered", status == 200, f"HTTP {status}")
            # Both routes run in one closure: back to back on one pool thread with no scan seeing
            # the thread idle between them, two jobs of one function are one stall. Let it end.
            wait_for(lambda: len(server.events("stallEnded")) > ended, 10)
        for cause in ("lockWait", "sleeping"):
            expr = f'stallwatch_stalls_total{{loop="cooperative-pool-job",cause="{cause}"}}'
            found = wait_for(lambda: [r for r in query(prom_port, expr) if float(r["value"][1]) >= 1], 30)
            check(f"prometheus: {expr} >= 1", bool(found), str(query(prom_port, "stallwatch_stalls_total")))
        durations_expr = 'sum(stallwatch_stall_duration_seconds_count{loop="cooperative-pool-job"})'
        durations = wait_for(lambda: [r for r in query(prom_port, durations_expr) if float(r["value"][1]) >= 2], 30)
        check("prometheus: stall durations recorded for both stalls", bool(durations),
              str(query(prom_port, "stallwatch_stall_duration_seconds_count")))
        lag = wait_for(lambda: query(prom_port, 'stallwatch_loop_lag_seconds_bucket{le="+Inf"}'), 30) or []
        nio_loops = {r["metric"].get("loop") for r in lag if r["metric"].get("loop", "").startswith("nio-loop-")}
        check("prometheus: a loop-lag histogram per NIO event loop", len(nio_loops) >= 1, str(sorted(nio_loops)))
        for name in ("stallwatch_process_resident_memory_bytes", "stallwatch_process_open_fds",
                     "stallwatch_process_startup_seconds", "stallwatch_samples_total",
                     "stallwatch_watchdog_wakeups_total"):
            found = wait_for(lambda: [r for r in query(prom_port, name) if float(r["value"][1]) > 0], 30)
            check(f"prometheus: {name} > 0", bool(found))
        status, text = server.fetch("/metrics")
        exported = exported_families(text) if status == 200 else set()
        documented = readme_metric_names(readme)
        undocumented = sorted(exported - documented)
        check("README: its metrics table lists every stallwatch_* metric /metrics shows",
              bool(exported) and not undocumented, f"missing from README: {undocumented}")
    finally:
        if prom is not None:
            prom.terminate()
            try:
                prom.wait(15)
            except subprocess.TimeoutExpired:
                prom.kill()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    failed = results.count(False)
    print(f"{results.count(True)} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
