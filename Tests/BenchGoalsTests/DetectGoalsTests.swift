import BenchGoals
import Testing

@Suite struct DetectGoalsTests {
    private func spinning(p99: Double, missed: Int = 0, duplicates: Int = 0) -> DetectManyLoopsFigures {
        DetectManyLoopsFigures(loops: 64, stalled: 64, spinning: true, thresholdMilliseconds: 500, stalls: 192,
                               missed: missed, duplicates: duplicates, latencyP99Milliseconds: p99)
    }

    private let sleeping = DetectManyLoopsFigures(loops: 8, stalled: 8, spinning: false, thresholdMilliseconds: 500, stalls: 24,
                                                  missed: 0, duplicates: 0, latencyP99Milliseconds: 503)

    @Test func everyGoalHasAVerdict() {
        let v = DetectGoals.evaluate(thresholds: [DetectThresholdFigures(thresholdMilliseconds: 100, latenciesMilliseconds: [100, 101], missed: 0),
                                                  DetectThresholdFigures(thresholdMilliseconds: 2000, latenciesMilliseconds: [2003], missed: 0)],
                                     manyLoops: [sleeping, spinning(p99: 540)])
        #expect(Set(v.keys) == Set(DetectGoals.keys(thresholds: [100, 2000])))
        #expect(v.values.allSatisfy { $0.pass })
        #expect(v["latency100ms"]?.value == 101)  // the worst stall, not the median
    }

    @Test func thresholdBoundaryIsInclusiveAndJudgesTheWorstStall() {
        let at = DetectThresholdFigures(thresholdMilliseconds: 500, latenciesMilliseconds: [501, 550], missed: 0)
        #expect(DetectGoals.evaluate(thresholds: [at], manyLoops: [])["latency500ms"]?.pass == true)
        let over = DetectThresholdFigures(thresholdMilliseconds: 500, latenciesMilliseconds: [501, 501, 550.1], missed: 0)
        #expect(DetectGoals.evaluate(thresholds: [over], manyLoops: [])["latency500ms"]?.pass == false)
    }

    @Test func aMissedStallFailsItsLatencyGoal() {
        let t = DetectThresholdFigures(thresholdMilliseconds: 100, latenciesMilliseconds: [100, 100], missed: 1)
        let v = DetectGoals.evaluate(thresholds: [t], manyLoops: [spinning(p99: 520, missed: 1)])
        #expect(v["latency100ms"]?.pass == false)
        #expect(v["latency100ms"]?.value == nil)
        #expect(v["spinning64P99"]?.pass == false)
        #expect(v["everyStallOnce"]?.pass == false)
        #expect(v["everyStallOnce"]?.value == 1)
    }

    @Test func spinningCaseBoundary() {
        #expect(DetectGoals.evaluate(thresholds: [], manyLoops: [spinning(p99: 550)])["spinning64P99"]?.pass == true)
        #expect(DetectGoals.evaluate(thresholds: [], manyLoops: [spinning(p99: 550.5)])["spinning64P99"]?.pass == false)
    }

    @Test func aDuplicateReportFailsExactlyOnce() {
        let v = DetectGoals.evaluate(thresholds: [], manyLoops: [sleeping, spinning(p99: 505, duplicates: 2)])
        #expect(v["everyStallOnce"]?.pass == false)
        #expect(v["everyStallOnce"]?.value == 2)
    }

    @Test func casesNotRunAreMisses() {
        let v = DetectGoals.evaluate(thresholds: [], manyLoops: [])
        #expect(v["spinning64P99"]?.pass == false)
        #expect(v["spinning64P99"]?.value == nil)
        #expect(v["everyStallOnce"]?.pass == false)
        // Sleeping loops are not the spinning case.
        #expect(DetectGoals.evaluate(thresholds: [], manyLoops: [sleeping])["spinning64P99"]?.pass == false)
    }
}
