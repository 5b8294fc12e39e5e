import StallwatchPolicy
import Testing

@Suite struct ThreadCPUBaselineTests {
    @Test func firstReadingGivesNothingThenEachThreadsTimeSinceTheLast() {
        var baseline = ThreadCPUBaseline()
        #expect(baseline.take([(1, .milliseconds(100)), (2, .milliseconds(5))]).isEmpty)
        let next = baseline.take([(1, .milliseconds(700)), (2, .milliseconds(5))])
        #expect(next == [ThreadCPUTime(threadID: 1, name: "", cpuTimeDelta: .milliseconds(600)),
                         ThreadCPUTime(threadID: 2, name: "", cpuTimeDelta: .zero)])
    }

    @Test func aThreadBornSinceTheLastReadingCountsAllItsTimeAndAGoneOneIsLeftOut() {
        var baseline = ThreadCPUBaseline()
        _ = baseline.take([(1, .milliseconds(100)), (2, .milliseconds(50))])
        // Thread 3 was born after the first reading; thread 2 exited.
        let next = baseline.take([(1, .milliseconds(150)), (3, .milliseconds(900))])
        #expect(next == [ThreadCPUTime(threadID: 1, name: "", cpuTimeDelta: .milliseconds(50)),
                         ThreadCPUTime(threadID: 3, name: "", cpuTimeDelta: .milliseconds(900))])
    }

    @Test func afterAResetTheNextReadingGivesNothingAgain() {
        var baseline = ThreadCPUBaseline()
        _ = baseline.take([(1, .milliseconds(100))])
        baseline.reset()
        #expect(baseline.take([(1, .milliseconds(900))]).isEmpty)
        #expect(baseline.take([(1, .milliseconds(950))]) == [ThreadCPUTime(threadID: 1, name: "", cpuTimeDelta: .milliseconds(50))])
    }

    @Test func aTidReusedWithALowerClockNeverGivesNegativeTime() {
        var baseline = ThreadCPUBaseline()
        _ = baseline.take([(7, .milliseconds(800))])
        #expect(baseline.take([(7, .milliseconds(10))]) == [ThreadCPUTime(threadID: 7, name: "", cpuTimeDelta: .zero)])
    }
}
