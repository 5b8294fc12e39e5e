import BenchGoals
import Testing

@Suite("bench allocations goals")
struct AllocationGoalsTests {
    @Test("an idle round passes only with no allocation at all; a report with up to 50")
    func boundaries() {
        let met = AllocationGoals.evaluate(AllocationFigures(perIdleRound: 0, perReport: 50))
        #expect(met["idleRoundAllocations"]?.pass == true)
        #expect(met["reportAllocations"]?.pass == true)
        let missed = AllocationGoals.evaluate(AllocationFigures(perIdleRound: 0.02, perReport: 51))
        #expect(missed["idleRoundAllocations"]?.pass == false)
        #expect(missed["reportAllocations"]?.pass == false)
    }

    @Test("a figure that was not measured is a MISS, never a PASS")
    func notMeasured() {
        let goals = AllocationGoals.evaluate(AllocationFigures(perIdleRound: nil, perReport: .nan))
        #expect(goals["idleRoundAllocations"]?.pass == false)
        #expect(goals["reportAllocations"]?.pass == false)
        #expect(goals["reportAllocations"]?.value == nil)
        #expect(Set(goals.keys) == Set(AllocationGoals.keys))
    }
}
