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
expect("every count goal but the pool deadlock's is one the summary makes", matrix.COUNT_GOALS - matrix.POOL_DEADLOCK_GOALS <= set(verdict))
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

# The pool deadlock: one cooperative-pool report listing every blocked job, one job report per job.
def deadlock(start_ms, tids, length_ms=3000):
    jobs = [injection("pooldeadlock", start_ms, length_ms, tid, where="pool") for tid in tids]
    return {"kind": "pooldeadlock", "ms": length_ms, "width": len(tids), "jobs": jobs,
            "wallStartNs": start_ms * MS, "wallEndNs": (start_ms + length_ms) * MS}


def pool_report(name, start_ms, listed, ids=None):
    r = report(name, start_ms, 2800, tid=99, loop="cooperative-pool", cause="starved", symbols=())
    r["poolJobs"] = [{"thread": {"id": t, "name": "w"}, "reportID": (ids or {}).get(t), "frames": []} for t in listed]
    return r


def job_report(name, start_ms, tid):
    return report(name, start_ms, 2900, tid=tid, loop="cooperative-pool-job", cause="lockWait",
                  symbols=("BlockingWork.waitForPoolGate(Dispatch.DispatchSemaphore) -> ()",))


good = deadlock(100_000, [21, 22])
no_pool = deadlock(110_000, [23, 24])
twice = deadlock(120_000, [25, 26])
partial = deadlock(130_000, [27, 28])
pool_run = {"server": "hb", "seconds": 20, "injections": [good, no_pool, twice, partial], "reports": [
    pool_report("p1", 100_100, [21, 22], ids={21: "j1", 22: "j2"}), job_report("j1", 100_010, 21), job_report("j2", 100_020, 22),
    job_report("j3", 110_010, 23), job_report("j4", 110_020, 24),                                    # no pool report
    pool_report("p3", 120_100, [25, 26]), job_report("j5", 120_010, 25), job_report("j6", 120_020, 26),
    job_report("j6b", 121_500, 26),                                                                   # job 26 twice
    pool_report("p4", 130_100, [27]), job_report("j7", 130_010, 27), job_report("j8", 130_020, 28),  # lists only 27
    report("n1", 130_500, 900, tid=5, loop="nio-loop-0"),                                             # another loop
    pool_report("u1", 200_000, [21]),                                                                  # no deadlock then
]}
matrix.match_pool_deadlock(pool_run)
for i in pool_run["injections"]:
    i["eval"] = matrix.evaluate_pool_deadlock(i)
g = good["eval"]
expect("a clean pool deadlock passes both checks", g["poolOk"] and g["jobsOk"] and g["jobsRightCause"] == 2
       and g["jobsFunction"] == 2 and g["listedWithOwnReport"] == 2)
expect("no cooperative-pool report: a pool miss, its jobs still once",
       no_pool["eval"]["poolCount"] == 0 and not no_pool["eval"]["poolOk"] and no_pool["eval"]["jobsOk"])
expect("a job reported twice: a jobs miss", twice["eval"]["jobsTwicePlus"] == 1 and not twice["eval"]["jobsOk"]
       and twice["eval"]["poolOk"])
expect("a pool report listing only some jobs: a pool miss", not partial["eval"]["listsAll"] and not partial["eval"]["poolOk"])
expect("a report of another loop during a deadlock is 'other'", partial["eval"]["other"] == 1)
expect("a pool report overlapping no deadlock is unmatched", [r["_file"] for r in pool_run["unmatched"]] == ["u1"])
pool_rows, pool_goals = matrix.summarize_pool_deadlock([pool_run])
pool_verdict = {x["goal"]: (x["pass"], x["measured"].split(" ")[0]) for x in pool_goals}
expect("pool goal counts 2 of 4 and MISSes", pool_verdict.get(matrix.POOL_GOAL) == (False, "2/4"))
expect("jobs goal counts 3 of 4 and MISSes", pool_verdict.get(matrix.POOL_JOBS_GOAL) == (False, "3/4"))
expect("the pool-deadlock goals are count goals (--strict-counts fails on them)",
       matrix.POOL_DEADLOCK_GOALS <= matrix.COUNT_GOALS and matrix.POOL_DEADLOCK_GOALS == set(pool_verdict))
expect("the row counts jobs once, twice, missed", (pool_rows[0]["jobs"], pool_rows[0]["jobsOnce"], pool_rows[0]["jobsTwicePlus"],
                                                   pool_rows[0]["jobsMissed"]) == (8, 7, 1, 0))
clean = {"server": "hb", "seconds": 5, "injections": [deadlock(100_000, [21, 22])], "reports": [
    pool_report("p1", 100_100, [21, 22]), job_report("j1", 100_010, 21), job_report("j2", 100_020, 22)]}
matrix.match_pool_deadlock(clean)
clean["injections"][0]["eval"] = matrix.evaluate_pool_deadlock(clean["injections"][0])
expect("a clean run passes both pool-deadlock goals", all(x["pass"] for x in matrix.summarize_pool_deadlock([clean])[1]))
expect("no pool-deadlock goals when none ran", matrix.summarize_pool_deadlock([]) == ([], []))
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
