import StallwatchReport
import Testing
@testable import Stallwatch

/// The scan sequences of the stall matrix's pool tails (Hummingbird under light `wrk` load, traced
/// scan by scan), in ms from the injection's real start, and what each rule makes of them.
@Suite("Dating pool jobs from their scans")
struct PoolJobDatingTests {
    let origin: UInt64 = 1_000_000_000_000
    func at(_ ms: Double) -> MonotonicInstant { MonotonicInstant(nanoseconds: UInt64(Int64(origin) + Int64(ms * 1e6))) }
    func ms(_ instant: MonotonicInstant) -> Double { (Double(instant.nanoseconds) - Double(origin)) / 1e6 }
    let base: UInt64 = 5_000_000_000  // the thread's demand at the last conclusive scan, ns
    func demand(plusMilliseconds extra: Double) -> UInt64 { base + UInt64(extra * 1e6) }

    @Test("a short request's run caught before a blocking job: the job began after it, not a scan period early")
    func briefRunBeforeBlockingJob() {
        // Out at −79.6, running 2 ms' worth of a short request at −39.5, blocked in the job (a
        // mutex) at +0.6. Taken for the job's first sign, the run dated it −59.6 ms.
        let previous: PoolJobDating.Conclusion = (at(-79.6), base, false)
        let start = PoolJobDating.start(previous: previous, briefRun: (at(-39.5), demand(plusMilliseconds: 2)),
                                        awaySince: nil, now: at(0.6), demandNow: demand(plusMilliseconds: 4.5),
                                        runningNow: false)
        #expect(abs(ms(start) - -19.45) < 0.01)
        let asAway = PoolJobDating.start(previous: previous, briefRun: nil, awaySince: at(-39.5), now: at(0.6),
                                         demandNow: demand(plusMilliseconds: 4.5), runningNow: false)
        #expect(abs(ms(asAway) - -59.55) < 0.01, "the rule the brief run replaces, for comparison")
    }

    @Test("a short request's run caught before a CPU-bound job: the job's demand dates it")
    func briefRunBeforeCPUJob() {
        // Out at −70, running briefly at −29.9, running (28 %) at +10.2, signalled and seen in the
        // job (compressing) at +50.4, 52.4 ms of demand since −70. From the run at −29.9 as its first
        // sign, the start came out −50.
        let previous: PoolJobDating.Conclusion = (at(-70), base, false)
        let start = PoolJobDating.start(previous: previous, briefRun: (at(-29.9), demand(plusMilliseconds: 1)),
                                        awaySince: at(10.2), now: at(50.4), demandNow: demand(plusMilliseconds: 52.4),
                                        runningNow: true, onCPU: true)
        #expect(abs(ms(start) - -1.0) < 0.01)
    }

    @Test("a job that mixes CPU and blocking calls, begun a fifth of an interval before a scan, is no brief run")
    func stormBegunBeforeScan() {
        // An fsync storm begun at 0 had wanted 19 % of the interval at the scan at +22.6: its first
        // sign, not a brief run; then running at +62.8, identified running at +102.9.
        #expect(!PoolJobDating.isBriefRun(share: 0.19))
        #expect(PoolJobDating.isBriefRun(share: 0.05))
        #expect(!PoolJobDating.isBriefRun(share: nil), "no demand read: nothing known")
        let previous: PoolJobDating.Conclusion = (at(-17.5), base, false)
        let start = PoolJobDating.start(previous: previous, briefRun: nil, awaySince: at(22.6), now: at(102.9),
                                        demandNow: demand(plusMilliseconds: 38), runningNow: true)
        #expect(abs(ms(start) - 2.55) < 0.01)
    }

    @Test("a blocked job whose wake-up the next scan caught: it ended before that run")
    func briefRunAfterBlockedJob() {
        // In the job (blocked reading a pipe) at +742, running briefly at +782.1, back in the
        // worker's wait at +822.2; the job really ended at +750. Counted as the job still running,
        // the run dated its end +802.1.
        let previous: PoolJobDating.Conclusion = (at(742), base, false)
        let end = PoolJobDating.end(previous: previous, awaySeenAt: nil,
                                    briefRunInJob: (at(782.1), demand(plusMilliseconds: 0.1)), now: at(822.2),
                                    demandNow: demand(plusMilliseconds: 2.5))
        #expect(abs(ms(end) - 762.05) < 0.01)
        let asAway = PoolJobDating.end(previous: previous, awaySeenAt: at(782.1), briefRunInJob: nil, now: at(822.2),
                                       demandNow: demand(plusMilliseconds: 2.5))
        #expect(abs(ms(asAway) - 802.15) < 0.01, "the rule the brief run replaces, for comparison")
    }

    @Test("one job straight after another on a worker running at both scans: the boundary between them")
    func jobAfterJob() {
        // Compressing at +710.6 and, at +750.7, in the response's job that followed it (the
        // compression really ended at +750); the thread ran all along. From its demand the new job
        // began at +710.6, ending the compression's report 40 ms early.
        let previous: PoolJobDating.Conclusion = (at(710.6), base, true)
        let start = PoolJobDating.start(previous: previous, briefRun: nil, awaySince: nil, now: at(750.7),
                                        demandNow: demand(plusMilliseconds: 40.1), runningNow: true, afterJob: true)
        #expect(abs(ms(start) - 730.65) < 0.01)
        let blockedBefore = PoolJobDating.start(previous: (at(710.6), base, false), briefRun: nil, awaySince: nil,
                                                now: at(750.7), demandNow: demand(plusMilliseconds: 10),
                                                runningNow: true, afterJob: true)
        #expect(abs(ms(blockedBefore) - 740.7) < 0.01, "blocked in the first job: the demand is the new job's")
    }

    @Test("a CPU-bound job that ended just after a scan: the next scan's run is brief beside the job's share")
    func cpuJobEndedAfterScan() {
        // In the job (an SQLite query) at +1498 wanting 100 %, running at 11 % at +1538.1, in the
        // worker's wait at +1578.1; the query ended at +1500. Counted as the job still running, the
        // run dated its end +1558.1.
        #expect(PoolJobDating.isBriefRun(share: 0.11, jobShare: 1.0))
        #expect(!PoolJobDating.isBriefRun(share: 0.11, jobShare: 0.05), "beside a blocked job, 11 % is work")
        #expect(!PoolJobDating.isBriefRun(share: 0.35, jobShare: 0.4), "an fsync storm's own pace")
        let previous: PoolJobDating.Conclusion = (at(1498), base, true)
        let end = PoolJobDating.end(previous: previous, awaySeenAt: nil,
                                    briefRunInJob: (at(1538.1), demand(plusMilliseconds: 4.4)), now: at(1578.1),
                                    demandNow: demand(plusMilliseconds: 7.3))
        #expect(abs(ms(end) - 1502.4) < 0.01)
    }

    @Test("an fsync storm seen blocked, then a brief run: it ended between the two")
    func stormEndedBeforeBriefRun() {
        // In the storm at +706.2 (45 % of a core), blocked in fsync at +746.4 with no stack naming
        // it, running at 16 % at +786.5, in the worker's wait at +826.7; the storm ended at +750.
        // Counted as the storm still running, the run dated its end +806.6.
        #expect(PoolJobDating.isBriefRun(share: 0.16, jobShare: 0.45))
        let previous: PoolJobDating.Conclusion = (at(706.2), base, true)
        let end = PoolJobDating.end(previous: previous, awaySeenAt: at(746.4),
                                    briefRunInJob: (at(786.5), demand(plusMilliseconds: 24)), now: at(826.7),
                                    demandNow: demand(plusMilliseconds: 25.9))
        #expect(abs(ms(end) - 766.45) < 0.01)
    }

    @Test("an fsync storm's first, slow interval looks like a brief run: the wanting that followed says it was the storm")
    func stormFirstIntervalLooksBrief() {
        // A storm begun at 0 on a new file: running at +41 having wanted 4 % since the scan at
        // −0.5, then 35 % until it was identified, running but not on the CPU most of the time, at
        // +81. Dated from after the run at +41, the 360 ms storm read 282 ms: under the threshold.
        let previous: PoolJobDating.Conclusion = (at(-0.5), base, false)
        let brief: PoolJobDating.Mark = (at(41), demand(plusMilliseconds: 1.6))
        let start = PoolJobDating.start(previous: previous, briefRun: brief, awaySince: nil, now: at(81),
                                        demandNow: demand(plusMilliseconds: 15.6), runningNow: true, onCPU: false)
        #expect(abs(ms(start) - 20.25) < 0.01)
        let asCPUJob = PoolJobDating.start(previous: previous, briefRun: brief, awaySince: nil, now: at(81),
                                           demandNow: demand(plusMilliseconds: 15.6), runningNow: true, onCPU: true)
        #expect(ms(asCPUJob) > 41, "on the CPU now: its demand dates it, after the run")
    }
}
