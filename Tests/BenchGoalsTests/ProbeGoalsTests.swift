import BenchGoals
import Testing

@Suite struct ProbeGoalsTests {
    @Test func everyGoalHasAVerdict() {
        let v = ProbeGoals.evaluate(ProbeFigures(pairNanoseconds: 12, idleWatchdogPercentOfCore: 0.005, addedAnonymousKiB: 1804))
        #expect(Set(v.keys) == Set(ProbeGoals.keys))
        #expect(v.values.allSatisfy { $0.pass })
        #expect(v["memoryAdded"]?.value == 1804)
    }

    @Test func limitsAreInclusive() {
        let at = ProbeGoals.evaluate(ProbeFigures(pairNanoseconds: 25, idleWatchdogPercentOfCore: 0.01, addedAnonymousKiB: 2048))
        #expect(at.values.allSatisfy { $0.pass })
        let over = ProbeGoals.evaluate(ProbeFigures(pairNanoseconds: 25.01, idleWatchdogPercentOfCore: 0.0101, addedAnonymousKiB: 2049))
        for key in ProbeGoals.keys { #expect(over[key]?.pass == false, "\(key)") }
    }

    @Test func notMeasuredIsAMiss() {
        // `--idle-seconds 0` measures the pair only.
        let v = ProbeGoals.evaluate(ProbeFigures(pairNanoseconds: 10, idleWatchdogPercentOfCore: nil, addedAnonymousKiB: nil))
        #expect(v["heartbeatPair"]?.pass == true)
        #expect(v["idleWatchdog"]?.pass == false)
        #expect(v["idleWatchdog"]?.value == nil)
        #expect(v["memoryAdded"]?.pass == false)
        #expect(ProbeGoals.evaluate(ProbeFigures(pairNanoseconds: .nan, idleWatchdogPercentOfCore: 0, addedAnonymousKiB: 0))["heartbeatPair"]?.pass == false)
    }
}
