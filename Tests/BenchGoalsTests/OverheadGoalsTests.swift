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
                        watchdogPathAllocationsDuringStall: 12)
    }

    @Test func everyGoalHasAVerdict() {
        let verdicts = OverheadGoals.evaluate(quietRun())
        #expect(Set(verdicts.keys) == Set(OverheadGoals.keys))
        #expect(OverheadGoals.keys.count == 8)
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
        #expect(v["watchdogPathAllocationsDuringStall"]?.pass == false)
        #expect(v["watchdogPathAllocationsDuringStall"]?.value == 12)
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
        f.timerStolenMicroseconds = 24   // 24 / 20 is exactly the double nearest 1.2
        f.timerFloorStolenMicroseconds = 20
        let v = OverheadGoals.evaluate(f)
        #expect(v["totalCost"]?.pass == true)
        #expect(v["timerStolenVsOwnFloor"]?.pass == true)
        f.timerTotalPercentOfCore = 3
        #expect(OverheadGoals.evaluate(f)["matrixClaim"]?.pass == false)
    }

    @Test func anUnmeasuredFigureIsAMissWithNoValue() {
        var f = quietRun()
        f.gperftoolsLibunwindStolenMicroseconds = nil
        f.timerFloorStolenMicroseconds = .nan
        f.watchdogPathAllocationsDuringStall = nil
        let v = OverheadGoals.evaluate(f)
        for key in ["belowGperftools", "timerStolenVsOwnFloor", "watchdogPathAllocationsDuringStall"] {
            #expect(v[key]?.pass == false)
            #expect(v[key]?.value == nil)
        }
    }
}
