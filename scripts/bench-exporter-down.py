#!/usr/bin/env python3
"""What a failing OTLP receiver costs the watchdog: the Hummingbird example under wrk with a stall
injected every 2 s, its profile exporter off, pointed at a refused port, and at a receiver that
answers after 5 s, in rounds whose order rotates. Per run: the watchdog thread's CPU (its
schedstat, ns), the server's resident memory at the end, the requests wrk completed, the export
failures it counted and the stalls it reported. Prints each run, then per variant the median and
the spread, and the other variants' watchdog CPU against the exporter-off one's spread.

The watchdog thread only hands a finished report to the exporter (an append under a lock): a
receiver that fails should not move its cost. This is a figure, not a test.

Usage: scripts/bench-exporter-down.py [BINARY] [--rounds N] [--seconds S]
(BINARY: Examples/.build/release/HummingbirdServer if built, else the debug one.)
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../Tests/EndToEnd"))
import otlp_receiver  # noqa: E402
import servers  # noqa: E402

STALL_EVERY = 2.5
STALL_MS = 900  # over the example's threshold as servers.py starts it (500 ms)


def watchdog_cpu_ns(pid):
    """CPU time of the thread named `stallwatch` (schedstat's first field), or None."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() != "stallwatch":
                    continue
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                return int(f.read().split()[0])
        except OSError:
            continue
    return None


def one_run(binary, variant, env, seconds):
    report_dir = tempfile.mkdtemp(prefix="bench-exporter-")
    server = servers.Server(binary, report_dir, extra_env=env)
    try:
        if not server.ready.wait(60):
            raise RuntimeError(f"{variant}: the server did not start: {server.lines[-10:]}")
        # The product's documented warm-up: concurrent waiting requests teach it where a task's
        # request is kept.
        warm = [threading.Thread(target=server.get, args=("/wait?ms=100",)) for _ in range(8)]
        for t in warm:
            t.start()
        for t in warm:
            t.join()
        pid = server.proc.pid
        cpu0 = watchdog_cpu_ns(pid)
        t0 = time.monotonic()
        wrk = subprocess.Popen(["wrk", "-t2", "-c16", f"-d{seconds}s", f"http://127.0.0.1:{server.port}/"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        injected = 0
        while time.monotonic() - t0 < seconds - STALL_EVERY:
            time.sleep(STALL_EVERY / 2)
            server.fetch(f"/inject/cpu?ms={STALL_MS}", timeout=30)
            injected += 1
            time.sleep(STALL_EVERY / 2 - STALL_MS / 1000)
        out, _ = wrk.communicate(timeout=seconds + 30)
        wall = time.monotonic() - t0
        cpu1 = watchdog_cpu_ns(pid)
        rss = servers.resident_kib(pid)
        _, metrics = server.fetch("/metrics")
        failures = sum(float(m) for m in re.findall(r'^stallwatch_export_failures_total\{[^}]*\} ([0-9.e+]+)$', metrics, re.M))
        requests = re.search(r"(\d+) requests in", out)
    finally:
        server.stop(timeout=40)
    stalls = len(servers.stall_report_files(report_dir))
    subprocess.run(["rm", "-rf", report_dir])
    return {
        "variant": variant,
        "watchdog_pct": (cpu1 - cpu0) / 1e9 / wall * 100 if cpu0 is not None and cpu1 is not None else float("nan"),
        "rss_mib": rss / 1024, "requests": int(requests.group(1)) if requests else 0,
        "failures": failures, "stalls": stalls, "injected": injected,
    }


def main():
    parser = argparse.ArgumentParser()
    release = os.path.join(HERE, "../Examples/.build/release/HummingbirdServer")
    debug = os.path.join(HERE, "../Examples/.build/debug/HummingbirdServer")
    parser.add_argument("binary", nargs="?", default=release if os.access(release, os.X_OK) else debug)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=15)
    args = parser.parse_args()
    up = otlp_receiver.Receiver()
    slow = otlp_receiver.Receiver(fault=lambda n: (200, None, 5.0))
    # The exporter gives up on an answer after 3 s: the receiver's late write then meets a closed
    # socket, which is the point, not news.
    slow.server.handle_error = lambda request, address: None
    variants = {
        "off": {},
        "up": {"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": up.endpoint + "/v1development/profiles"},
        "down": {"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": "http://127.0.0.1:9/v1development/profiles"},
        "slow": {"OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT": slow.endpoint + "/v1development/profiles",
                 "OTEL_EXPORTER_OTLP_TIMEOUT": "3000"},
    }
    names = list(variants)
    print(f"bench-exporter-down: {os.path.relpath(args.binary)}, {args.rounds} rounds × {names} (order rotating), "
          f"wrk -t2 -c16 {args.seconds} s on GET /, a {STALL_MS} ms CPU stall every {STALL_EVERY} s, threshold {servers.THRESHOLD_MS} ms",
          flush=True)
    runs = []
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            run = one_run(args.binary, name, variants[name], args.seconds)
            runs.append(run)
            print(f"  round {r + 1} {name:4}: watchdog {run['watchdog_pct']:.3f} % of a core, {run['requests']} requests, "
                  f"{run['stalls']}/{run['injected']} stalls reported, {run['failures']:.0f} export failures, "
                  f"RSS {run['rss_mib']:.1f} MiB", flush=True)
    medians = {}
    for name in names:
        mine = [x for x in runs if x["variant"] == name]
        pct = [x["watchdog_pct"] for x in mine]
        medians[name] = statistics.median(pct)
        print(f"{name:4}: watchdog median {medians[name]:.3f} % (spread {min(pct):.3f}–{max(pct):.3f}), "
              f"requests median {statistics.median(x['requests'] for x in mine):.0f}, "
              f"RSS max {max(x['rss_mib'] for x in mine):.1f} MiB, export failures {sum(x['failures'] for x in mine):.0f}")
    off = [x["watchdog_pct"] for x in runs if x["variant"] == "off"]
    for name in ("up", "down", "slow"):
        inside = min(off) <= medians[name] <= max(off)
        print(f"{name} vs off: watchdog {medians[name] - medians['off']:+.3f} points of a core "
              f"({'inside' if inside else 'outside'} the exporter-off runs' spread)")
    up.close()
    slow.close()


if __name__ == "__main__":
    main()
