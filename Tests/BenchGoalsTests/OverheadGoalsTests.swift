import BenchGoals
import Testing

@Suite struct OverheadGoalsTests {
    /// The quiet run from the issue: 0.046 % total, 19.4 µs against gperftools' 32.9 / 64.5 µs.
    private func quietRun() -> OverheadFigures {
        OverheadFigures(timerTotalPercentOfCore: 0.046, timerStolenMicroseconds: 19.4,
                        timerFloorStolenMicroseconds: 18.0, threadStolenMicroseconds: 37.2,
                        threadFloorStolenMicroseconds: 38.1, threadLatencyP99Microseconds: 133.7,
                        floorLatencyMedianMicroseconds: 72.9, gperftoolsLibunwindStolenMicroseconds: 64.5,
                        gperftoolsFramePointerStolenMicroseconds: 32.9, samplingPathAllocations: 0,
                        watchdogPathAllocationsDuringStall: 12, timerHandlerP50Microseconds: 0.42,
                        timerSystemCallsPerSample: 0.0, perfStolenOverTimer: 0.72)
    }

    @Test func everyGoalHasAVerdict() {
        let verdicts = OverheadGoals.evaluate(quietRun())
        #expect(Set(verdicts.keys) == Set(OverheadGoals.keys))
        #expect(OverheadGoals.keys.count == 12)
    }

    @Test func judgesEachFigureAgainstItsGoal() {
        let v = OverheadGoals.evaluate(quietRun())
        #expect(v["totalCost"]?.pass == false)           // 0.046 > 0.03: a MISS, reported
        #expect(v["matrixClaim"]?.pass == true)
        #expect(v["timerStolenVsOwnFloor"]?.pass == true) // 19.4 / 18.0 = 1.08
        #expect(v["threadStolenVsOwnFloor"]?.pass == true)
        #expect(v["belowGperftools"]?.pass == true)
        #expect(v["latencyP99VsFloor"]?.pass == true)     // 1.83×
        #expect(v["samplingPathAllocations"]?.pass == true)
        #expect(v["watchdogPathAllocationsDuringStall"]?.pass == true)
        #expect(v["watchdogPathAllocationsDuringStall"]?.value == 12)
        #expect(v["handlerP50"]?.pass == true)
        #expect(v["belowGperftoolsGenericFP"]?.pass == true) // 19.4 < 32.9
        #expect(v["handlerSystemCalls"]?.pass == true)
        #expect(v["perfVsTimer"]?.pass == true)
    }

    /// The A/A phases do not judge anything: they put the ratio of two identical phases beside the
    /// ratio goals, and only when the run had them.
    @Test func aaRatioIsStatedBesideTheRatioGoals() {
        var f = quietRun()
        let without = OverheadGoals.evaluate(f)
        #expect(without["timerStolenVsOwnFloor"]?.detail.contains("A/A") == false)
        f.timerFloorAgainStolenMicroseconds = 19.8   // 19.8 / 18.0 = 1.1
        f.threadFloorAgainStolenMicroseconds = 34.29 // 34.29 / 38.1 = 0.9
        let with = OverheadGoals.evaluate(f)
        #expect(with["timerStolenVsOwnFloor"]?.detail.contains("A/A: timer/empty again ÷ timer/empty, same run: 1.1 ") == true,
                "\(with["timerStolenVsOwnFloor"]?.detail ?? "")")
        #expect(with["threadStolenVsOwnFloor"]?.detail.contains("A/A: floor again ÷ floor, same run: 0.9 ") == true,
                "\(with["threadStolenVsOwnFloor"]?.detail ?? "")")
        #expect(with["timerStolenVsOwnFloor"]?.pass == without["timerStolenVsOwnFloor"]?.pass)
        #expect(with["timerStolenVsOwnFloor"]?.value == without["timerStolenVsOwnFloor"]?.value)
    }

    /// The bare walk of the same records is put beside the handler's time, and judges nothing.
    @Test func bareWalkIsStatedBesideTheHandlerGoal() {
        var f = quietRun()
        let without = OverheadGoals.evaluate(f)
        #expect(without["handlerP50"]?.detail.contains("read bare") == false)
        f.timerHandlerBareWalkP50Microseconds = 0.1104
        let with = OverheadGoals.evaluate(f)
        #expect(with["handlerP50"]?.detail.hasSuffix("; the same records read bare, same run: 0.11 µs") == true,
                "\(with["handlerP50"]?.detail ?? "")")
        #expect(with["handlerP50"]?.pass == without["handlerP50"]?.pass)
        #expect(with["handlerP50"]?.value == without["handlerP50"]?.value)
    }

    @Test func watchdogAllocationsAreJudgedPerStallOfTwoReports() {
        var f = quietRun()
        f.watchdogPathAllocationsDuringStall = 100
        #expect(OverheadGoals.evaluate(f)["watchdogPathAllocationsDuringStall"]?.pass == true)
        f.watchdogPathAllocationsDuringStall = 101
        #expect(OverheadGoals.evaluate(f)["watchdogPathAllocationsDuringStall"]?.pass == false)
    }

    @Test func comparesWithTheFasterGperftoolsMode() throws {
        var f = quietRun()
        f.gperftoolsFramePointerStolenMicroseconds = 19.0  // a tie with generic_fp is not "below"
        let verdict = try #require(OverheadGoals.evaluate(f)["belowGperftools"])
        #expect(!verdict.pass)
        #expect(abs((verdict.value ?? 0) - 19.4 / 19.0) < 1e-9)
    }

    @Test func boundariesAreInclusiveForLimitsAndExclusiveForBelow() {
        var f = quietRun()
        f.timerTotalPercentOfCore = 0.03
        f.timerStolenMicroseconds = 22   // 22 / 20 is exactly the double nearest 1.1
        f.timerFloorStolenMicroseconds = 20
        f.timerHandlerP50Microseconds = 0.5
        f.perfStolenOverTimer = 0.9
        f.timerSystemCallsPerSample = -0.009  // a difference of counts: slightly below 0 is ≈ 0
        var v = OverheadGoals.evaluate(f)
        #expect(v["totalCost"]?.pass == true)
        #expect(v["timerStolenVsOwnFloor"]?.pass == true)
        #expect(v["handlerP50"]?.pass == true)
        #expect(v["perfVsTimer"]?.pass == true)
        #expect(v["handlerSystemCalls"]?.pass == true)
        f.timerStolenMicroseconds = 22.1  // the issue's 1.1×, no longer the old 1.2×
        f.timerHandlerP50Microseconds = 0.51
        f.perfStolenOverTimer = 0.91
        f.timerSystemCallsPerSample = 0.01
        v = OverheadGoals.evaluate(f)
        for key in ["timerStolenVsOwnFloor", "handlerP50", "perfVsTimer", "handlerSystemCalls"] {
            #expect(v[key]?.pass == false, "\(key)")
        }
        f.timerTotalPercentOfCore = 3
        #expect(OverheadGoals.evaluate(f)["matrixClaim"]?.pass == false)
    }

    @Test func anUnmeasuredFigureIsAMissWithNoValue() {
        var f = quietRun()
        f.gperftoolsLibunwindStolenMicroseconds = nil
        f.timerFloorStolenMicroseconds = .nan
        f.watchdogPathAllocationsDuringStall = nil
        f.timerHandlerP50Microseconds = nil
        f.timerSystemCallsPerSample = nil  // no tracefs: not counted, not 0
        f.perfStolenOverTimer = nil        // perf events refused
        f.gperftoolsFramePointerStolenMicroseconds = .infinity
        let v = OverheadGoals.evaluate(f)
        for key in ["belowGperftools", "timerStolenVsOwnFloor", "watchdogPathAllocationsDuringStall", "handlerP50",
                    "handlerSystemCalls", "perfVsTimer", "belowGperftoolsGenericFP"] {
            #expect(v[key]?.pass == false, "\(key)")
            #expect(v[key]?.value == nil, "\(key)")
        }
    }
}
