#!/usr/bin/env python3
"""The matrix's own matching and scoring on made-up reports, so a verdict on Stallwatch is never a
harness bug: no server, no clock, runs in well under a second. Exits non-zero on any failure."""
import os
import sys

sys.dont_write_bytecode = True   # no __pycache__ left in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import matrix  # noqa: E402

MS = 1_000_000
failures = []


def expect(name, ok):
    print(("PASS " if ok else "FAIL ") + name)
    if not ok:
        failures.append(name)


def injection(kind, start_ms, length_ms, tid, where="loop", multiplier=3.0):
    return {"kind": kind, "ms": length_ms, "tid": tid, "thread": "t", "where": where, "multiplier": multiplier,
            "first": False, "wallStartNs": start_ms * MS, "wallEndNs": (start_ms + length_ms) * MS,
            "monoStartNs": start_ms * MS, "monoEndNs": (start_ms + length_ms) * MS}


def report(name, start_ms, length_ms, tid, loop="nio-loop-0", cause="sleeping", symbols=("blockInSleep",), seq=0, final=True):
    return {"_file": name, "kind": "stall", "id": name, "loopName": loop, "thread": {"id": tid, "name": "t"},
            "startTimeUnixNanoseconds": start_ms * MS, "durationNanoseconds": length_ms * MS, "sequenceInStall": seq,
            "durationIsFinal": final, "cause": {"kind": cause}, "blamedStack": [{"symbol": s} for s in symbols]}


sleep = injection("sleep", 10_000, 1500, tid=7)
mutex = injection("mutex", 20_000, 1500, tid=8, where="pool")
short = injection("cpu", 30_000, 350, tid=7, multiplier=0.7)
run = {
    "injections": [sleep, mutex, short],
    "reports": [
        report("a", 10_020, 1480, tid=7),                                            # exact, right
        report("b", 20_300, 1200, tid=9, loop="cooperative-pool-job", cause="starved", symbols=("x",)),  # wrong thread
        report("c", 21_000, 500, tid=8, loop="cooperative-pool-job", cause="lockWait", symbols=("blockOnLock",), seq=1),
        report("d", 50_000, 700, tid=7),                                             # no injection then
        report("e", 60_000, 700, tid=7),                                             # in the no-injection run
    ],
    "noInjectionRun": {"reportFiles": ["e"], "seconds": 1},
}
matrix.match(run)
expect("a report on the same thread inside the stall is matched to it", [r["_file"] for r in sleep["reports"]] == ["a"])
expect("a report overlapping in time is matched even on another thread", sorted(r["_file"] for r in mutex["reports"]) == ["b", "c"])
expect("a report outside every stall is unmatched", [r["_file"] for r in run["unmatched"]] == ["d"])
expect("a report of the no-injection run is not counted twice", all(r["_file"] != "e" for r in run["unmatched"]))

e = matrix.evaluate(sleep, {"a": (10_000 + 530) * MS})
expect("start, duration error and latency in ms", (e["startErrorMs"], e["durationErrorMs"], e["latencyMs"]) == (20, -20, 530))
expect("right loop, cause and function", e["rightLoop"] and e["rightCause"] and e["functionPresent"])
m = matrix.evaluate(mutex, {})
expect("two reports of one stall: counted twice, scored on the first (sequence 0)", m["count"] == 2 and not m["rightLoop"] and not m["rightCause"])
expect("a missed stall has count 0", matrix.evaluate(short, {})["count"] == 0)

for i in run["injections"]:
    i["eval"] = matrix.evaluate(i, {})
rows, goals = matrix.summarize({("nio", "loop", i["kind"]): [i] for i in run["injections"]}, [run])
verdict = {g["goal"]: g["pass"] for g in goals}
expect("once-goal MISSes with a duplicate", verdict["reported exactly once >= 99%"] is False)
expect("an unmatched report is a MISS", verdict["0 reports matching no injected stall"] is False)
expect("a no-injection report is a false positive", verdict["0 false positives under wrk with no injection"] is False)
expect("a silent 0.7x stall passes its goal", verdict["stalls <= 0.8x threshold reported 0 times"] is True)
expect("nearest-rank p99 of 3 values is the largest", matrix.pct([1, 5, 3], 99) == 5)
expect("every count goal is one the summary makes", matrix.COUNT_GOALS <= set(verdict))
chain = ["blockOnCPU", "computeUnderAsyncChain", "closure in timedInjection", "chainRepository() async",
         "chainService() async", "chainRoute() async", "swift_job_run"]
expect("an async chain named in order counts", matrix.named_in_order(matrix.ASYNC_CHAINS["async3"], chain))
expect("an async chain cut at the first await does not count",
       not matrix.named_in_order(matrix.ASYNC_CHAINS["async3"], chain[:4] + chain[6:]))
expect("an async chain named out of order does not count",
       not matrix.named_in_order(matrix.ASYNC_CHAINS["async3"], [chain[0], chain[1], chain[4], chain[3], chain[5]]))
a5 = injection("async5", 0, 1500, 7, where="pool")
a5["reports"] = [report("a5", 0, 1500, 7, loop="cooperative-pool-job", cause="cpuBound", symbols=chain)]
expect("a 5-deep chain whose outer levels are missing is not named", matrix.evaluate(a5, {})["functionPresent"] is False)

# Lock holders: named when the report's holder is the answer's tid and its stack has the function.
held = injection("heldmutex", 70_000, 1500, tid=11, where="pool") | {"holderTid": 12, "holderFunction": "computeWhileHoldingLock"}
wrong = injection("heldmutex", 80_000, 1500, tid=11, where="pool") | {"holderTid": 12, "holderFunction": "computeWhileHoldingLock"}
sema = injection("semaphore", 90_000, 1500, tid=11, where="pool")


def lock_report(name, start_ms, lock):
    r = report(name, start_ms, 1500, tid=11, loop="cooperative-pool-job", cause="lockWait", symbols=("blockOnHeldLock",))
    r["lockWait"] = lock
    return r


holder = {"thread": {"id": 12, "name": "sw-lock-holder"}, "frames": [{"symbol": "BlockingWork.computeWhileHoldingLock(milliseconds: Swift.Int) -> ()"}]}
locks = {"injections": [held, wrong, sema], "noInjectionRun": {"reportFiles": [], "seconds": 1}, "reports": [
    lock_report("h", 70_000, {"ownership": "held", "holder": holder}),
    lock_report("w", 80_000, {"ownership": "held", "holder": holder | {"thread": {"id": 13, "name": "x"}}}),
    lock_report("s", 90_000, {"ownership": "noOwner"}),
]}
matrix.match(locks)
for i in locks["injections"]:
    i["eval"] = matrix.evaluate(i, {})
expect("the right holder thread and function: named", held["eval"].get("holderNamed") is True)
expect("another thread as holder: not named", wrong["eval"].get("holderNamed") is False)
expect("a semaphore report saying no owner", sema["eval"].get("noOwnerSaid") is True)
lock_cases = {}
for i in locks["injections"]:
    lock_cases.setdefault(("hb", "pool", i["kind"]), []).append(i)
_, lock_goals = matrix.summarize(lock_cases, [locks])
lock_verdict = {g["goal"]: (g["pass"], g["measured"]) for g in lock_goals}
expect("holder goal counts 1 of 2 and MISSes", lock_verdict.get("mutex holder named (thread and function) >= 95%") == (False, "1/2"))
expect("no-owner goal passes", lock_verdict.get("semaphore wait says 'no owner' in every report") == (True, "1/1"))
expect("lock goals absent when no lock stall ran", not any("holder" in g["goal"] for g in goals))
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
