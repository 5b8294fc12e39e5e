import BenchGoals
import Testing

@Suite struct MemoryGoalsTests {
    @Test func everyGoalHasAVerdict() {
        let verdicts = MemoryGoals.evaluate(MemoryFigures(addedAnonKiB: 1000, addedFileKiB: 500))
        #expect(Set(verdicts.keys) == Set(MemoryGoals.keys))
    }

    @Test func judgesAnonymousAndFileBackedTogether() throws {
        // The starting point: +4.5 MiB anonymous, +12.5 MiB file-backed.
        let before = try #require(MemoryGoals.evaluate(MemoryFigures(addedAnonKiB: 4608, addedFileKiB: 12800))["rssAfterFirstReport"])
        #expect(!before.pass)
        #expect(before.value == 17408)
        #expect(before.word == "MISS")
        // Each half under the goal but not the sum: still a MISS.
        #expect(MemoryGoals.evaluate(MemoryFigures(addedAnonKiB: 3000, addedFileKiB: 3000))["rssAfterFirstReport"]?.pass == false)
        // Exactly 4 MiB passes; memory handed back (a negative delta) passes.
        #expect(MemoryGoals.evaluate(MemoryFigures(addedAnonKiB: 4000, addedFileKiB: 96))["rssAfterFirstReport"]?.pass == true)
        #expect(MemoryGoals.evaluate(MemoryFigures(addedAnonKiB: -200, addedFileKiB: 100))["rssAfterFirstReport"]?.pass == true)
    }

    @Test func aFigureNotMeasuredIsNotMet() throws {
        let verdict = try #require(MemoryGoals.evaluate(MemoryFigures(addedAnonKiB: nil, addedFileKiB: 100))["rssAfterFirstReport"])
        #expect(!verdict.pass)
        #expect(verdict.value == nil)
        #expect(MemoryGoals.evaluate(MemoryFigures(addedAnonKiB: .nan, addedFileKiB: 1))["rssAfterFirstReport"]?.pass == false)
    }
}
