import BenchGoals
import Testing

@Suite struct ServerGoalsTests {
    @Test func everyGoalHasAVerdict() {
        let v = ServerGoals.evaluate(ServerFigures(watchdogPercentOfCoreUnderLoad: 0.008, idleLoopWakeupsAddedPerLoop: 0.1,
                                                   stallsReportedUnderLoad: 0, idlePoolWakeupsAdded: 0.2))
        #expect(Set(v.keys) == Set(ServerGoals.keys))
        #expect(v.values.allSatisfy { $0.pass })
    }

    @Test func boundaries() {
        let at = ServerGoals.evaluate(ServerFigures(watchdogPercentOfCoreUnderLoad: 0.01, idleLoopWakeupsAddedPerLoop: 0.5,
                                                    stallsReportedUnderLoad: 0, idlePoolWakeupsAdded: 0.5))
        #expect(at.values.allSatisfy { $0.pass })
        let over = ServerGoals.evaluate(ServerFigures(watchdogPercentOfCoreUnderLoad: 0.051, idleLoopWakeupsAddedPerLoop: 0.51,
                                                      stallsReportedUnderLoad: 1, idlePoolWakeupsAdded: 25))
        for key in ServerGoals.keys { #expect(over[key]?.pass == false, "\(key)") }
        // The watchdog may remove wake-ups (noise below 0): fewer is within the goal.
        #expect(ServerGoals.evaluate(ServerFigures(watchdogPercentOfCoreUnderLoad: nil, idleLoopWakeupsAddedPerLoop: -0.2,
                                                   stallsReportedUnderLoad: nil))["idleLoopWakeups"]?.pass == true)
    }

    @Test func notMeasuredIsAMiss() {
        let v = ServerGoals.evaluate(ServerFigures(watchdogPercentOfCoreUnderLoad: nil, idleLoopWakeupsAddedPerLoop: .nan,
                                                   stallsReportedUnderLoad: nil))
        for key in ServerGoals.keys {
            #expect(v[key]?.pass == false, "\(key)")
            #expect(v[key]?.value == nil, "\(key)")
        }
    }
}
