#!/usr/bin/env python3
"""End-to-end checks of Stallwatch inside real servers (Examples/), driven over 127.0.0.1.

For each server: a normal keep-alive load must give no report; each blocking handler (sleep, CPU,
lock, socket read) must give exactly one stall report that names the handler's own function, with
the right cause and its final duration; SIGTERM must stop the server cleanly. Prints one line per
check and ends with "N passed, M failed"; exits non-zero on any failure.

Usage: servers.py NAME=BINARY[:LOOP_PREFIX] ...   (see scripts/e2e-servers.sh)
"""
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

THRESHOLD_MS = 500
BLOCK_MS = 1500
EXPECTED_CAUSE = {"sleep": "sleeping", "cpu": "cpuBound", "lock": "lockWait", "socket": "networkIO"}
HANDLERS = {
    "hummingbird": {"sleep": "sleepingHandler", "cpu": "computingHandler", "lock": "lockingHandler",
                    "socket": "socketReadingHandler"},
    "nio": {"sleep": "sleepOnEventLoop", "cpu": "computeOnEventLoop", "lock": "waitForLockOnEventLoop",
            "socket": "readSocketOnEventLoop"},
    "vapor": {"sleep": "sleepingHandler", "cpu": "computingHandler", "lock": "lockingHandler",
              "socket": "socketReadingHandler"},
}
LOOPS = {"hummingbird": lambda loop: loop == "cooperative-pool-job",
         "nio": lambda loop: loop.startswith("nio-loop-"),
         "vapor": lambda loop: loop == "cooperative-pool-job"}

results = []


def check(name, ok, detail=""):
    results.append(ok)
    print(("PASS " if ok else "FAIL ") + name + ("" if ok or not detail else " -- " + detail), flush=True)
    return ok


class Server:
    """An example server on an ephemeral port, its output kept; `extra_env` adds to its environment."""
    def __init__(self, binary, report_dir, extra_env=None):
        env = dict(os.environ, PORT="0", STALLWATCH_REPORT_DIR=report_dir, STALLWATCH_THRESHOLD_MS=str(THRESHOLD_MS),
                   **(extra_env or {}))
        self.proc = subprocess.Popen([binary], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        # When each line arrived (time.monotonic()), index for index with `lines`.
        self.line_times = []
        self.port = None
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.line_times.append(time.monotonic())
            self.lines.append(line)
            if line.startswith("listening on 127.0.0.1:"):
                self.port = int(line.rsplit(":", 1)[1])
                self.ready.set()

    def events(self, kind):
        out = []
        for line in list(self.lines):
            if line.startswith("{"):
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("event") == kind:
                    out.append(event)
        return out

    def get(self, path, timeout=15):
        return self.fetch(path, timeout)[0]

    def fetch(self, path, timeout=15, headers=None):
        """(HTTP status, body text) of a GET."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("GET", path, headers=headers or {})
            response = conn.getresponse()
            return response.status, response.read().decode("utf-8", "replace")
        finally:
            conn.close()

    def stop(self, timeout=15):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


def resident_kib(pid):
    """The process's resident memory (VmRSS), KiB; 0 when the line is missing."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def report_files(directory):
    return sorted(f for f in os.listdir(directory) if f.endswith(".json")) if os.path.isdir(directory) else []


def stall_report_files(directory):
    """Stall reports only: a `cpuHigh` or `cpuSustained` report under a flat-out load is true (the
    process does use most of the cores), not a stall."""
    return [f for f in report_files(directory) if "-stall-" in f]


def symbols(report):
    names = [f.get("symbol") or "" for f in report.get("blamedStack", [])]
    stack = list(report.get("callTree", []))
    while stack:  # flat (schema 2: nodes with a parent index) or nested (schema 1: children)
        node = stack.pop()
        names.append(node.get("symbol") or "")
        stack.extend(node.get("children", []))
    return names


def load(server_name, client_threads=8, requests_each=250):
    failures = []

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        for _ in range(requests_each):
            try:
                conn.request("GET", "/")
                r = conn.getresponse()
                r.read()
                if r.status != 200:
                    failures.append(r.status)
            except Exception as e:  # noqa: BLE001 - any failure is a failed request
                failures.append(repr(e))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.close()

    threads = [threading.Thread(target=worker) for _ in range(client_threads)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return failures, time.monotonic() - start


def run(server_name, binary):
    global server
    report_dir = tempfile.mkdtemp(prefix=f"stallwatch-e2e-{server_name}-")
    server = Server(binary, os.path.join(report_dir, "reports"))
    try:
        if not check(f"{server_name}: listens on 127.0.0.1", server.ready.wait(60), "no 'listening on' line in 60 s: " + " | ".join(server.lines[-5:])):
            return
        reports_dir = os.path.join(report_dir, "reports")
        failures, seconds = load(server_name)
        time.sleep(1.0)
        check(f"{server_name}: 2000 keep-alive requests over 8 connections, all answered ({seconds:.1f} s)", not failures, str(failures[:3]))
        check(f"{server_name}: a normal load gives no stall report", not stall_report_files(reports_dir) and not server.events("stall"),
              f"files {stall_report_files(reports_dir)}, events {server.events('stall')}")
        for kind, cause in EXPECTED_CAUSE.items():
            before = set(report_files(reports_dir))
            started = time.monotonic()
            status = server.get(f"/block/{kind}?ms={BLOCK_MS}")
            took = time.monotonic() - started
            check(f"{server_name}: /block/{kind} answered after {took:.1f} s", status == 200 and took >= BLOCK_MS / 1000 * 0.9, f"status {status}")
            deadline = time.monotonic() + 5
            ended = len(server.events("stallEnded"))
            while time.monotonic() < deadline:  # the final report is written when the stall has ended
                new = sorted(set(report_files(reports_dir)) - before)
                finals = []
                for name in new:
                    try:
                        with open(os.path.join(reports_dir, name)) as f:
                            finals.append(json.load(f).get("durationIsFinal"))
                    except (OSError, ValueError):
                        finals.append(None)
                if new and all(finals):
                    break
                time.sleep(0.2)
            new = sorted(set(report_files(reports_dir)) - before)
            if not check(f"{server_name}: /block/{kind}: exactly one report", len(new) == 1, f"{len(new)} new report files: {new}"):
                for name in new:
                    with open(os.path.join(reports_dir, name)) as f:
                        r = json.load(f)
                    print(f"     {name}: loop={r.get('loopName')} cause={(r.get('cause') or {}).get('kind')} blamed={symbols(r)[:6]}")
                if not new:
                    continue
            with open(os.path.join(reports_dir, new[0])) as f:
                report = json.load(f)
            loop = report.get("loopName", "")
            got_cause = (report.get("cause") or {}).get("kind")
            handler = HANDLERS[server_name][kind]
            names = symbols(report)
            check(f"{server_name}: /block/{kind}: reported on the right loop ({loop})", LOOPS[server_name](loop))
            check(f"{server_name}: /block/{kind}: cause {cause}", got_cause == cause, f"got {got_cause}: {(report.get('cause') or {}).get('evidence')}")
            blamed = [f.get("symbol") or "" for f in report.get("blamedStack", [])]
            check(f"{server_name}: /block/{kind}: the blamed stack names {handler}", any(handler in n for n in blamed),
                  f"blamed: {blamed[:12]}; in the call tree: {any(handler in n for n in names)}")
            line = next((e for e in server.events("stall") if e.get("id") == report.get("id")), {})
            summary = line.get("blamed", "").split(" <- ")
            check(f"{server_name}: /block/{kind}: the log line's summary starts in the application's code and names {handler}",
                  bool(summary) and summary[0].startswith(("HummingbirdServer.", "NIOServer.", "VaporServer.", "BlockingWork."))
                  and any(handler in frame for frame in summary),
                  f"blamed={line.get('blamed')!r}")
            duration_ms = report.get("durationNanoseconds", 0) / 1e6
            check(f"{server_name}: /block/{kind}: stored report is final, {duration_ms:.0f} ms",
                  report.get("durationIsFinal") is True and BLOCK_MS * 0.7 <= duration_ms <= BLOCK_MS * 1.5,
                  f"durationIsFinal={report.get('durationIsFinal')}")
            mode = os.stat(os.path.join(reports_dir, new[0])).st_mode & 0o777
            check(f"{server_name}: /block/{kind}: report file is owner-only", mode == 0o600, oct(mode))
        code = server.stop()
        check(f"{server_name}: SIGTERM stops the server with exit 0", code == 0, f"exit {code}; last lines: {server.lines[-5:]}")
    finally:
        server.stop()
        shutil.rmtree(report_dir, ignore_errors=True)


def main():
    for arg in sys.argv[1:]:
        name, binary = arg.split("=", 1)
        run(name, binary)
    passed = sum(1 for r in results if r)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not results else 0)


if __name__ == "__main__":
    main()
