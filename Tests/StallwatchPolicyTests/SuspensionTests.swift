import StallwatchPolicy
import StallwatchReport
import Testing

@Suite struct SuspensionTests {
    let judge = SuspensionJudge()

    @Test func onTimeIsNoStop() {
        #expect(judge.stoppedTime(lateness: .milliseconds(3), runQueueWait: .zero, cpuTime: .zero) == .zero)
    }

    @Test func lateWithoutRunQueueWaitIsAStop() {
        let stopped = judge.stoppedTime(lateness: .seconds(3), runQueueWait: .milliseconds(2), cpuTime: .microseconds(50))
        #expect(stopped == .seconds(3) - .milliseconds(2) - .microseconds(50))
    }

    @Test func lateBecauseStarvedIsNoStop() {
        // Runnable but waiting for a CPU for nearly all of its lateness: the CPUs were saturated.
        #expect(judge.stoppedTime(lateness: .seconds(3), runQueueWait: .milliseconds(2_900), cpuTime: .zero) == .zero)
    }

    @Test func noEvidenceSaysSo() {
        #expect(judge.stoppedTime(lateness: .seconds(3), runQueueWait: nil, cpuTime: .zero) == nil)
    }

    private func at(ms: Int64) -> MonotonicInstant { MonotonicInstant(nanoseconds: UInt64(ms) * 1_000_000) }

    @Test func stoppedTimeIsNotBusyTime() {
        var detector = StallDetector(configuration: WatchdogConfiguration(threshold: .seconds(2)))
        #expect(detector.evaluate(busySince: at(ms: 1000), now: at(ms: 2000), previousRoundAt: at(ms: 1000), stoppedFor: .zero)
            == .busy(elapsed: .seconds(1)))
        // 3 s later, 2.9 s of which the process was stopped: 1.1 s busy, not a stall.
        let after = detector.evaluate(busySince: at(ms: 1000), now: at(ms: 5000), previousRoundAt: at(ms: 2000),
                                      stoppedFor: .milliseconds(2900))
        #expect(after == .suspected(elapsed: .milliseconds(1100)))
        // Still busy 1 s later with no stop: 2.1 s of real busy time is a stall, dated from the shifted start.
        let later = detector.evaluate(busySince: at(ms: 1000), now: at(ms: 6000), previousRoundAt: at(ms: 5000), stoppedFor: .zero)
        #expect(later == .stalled(since: at(ms: 3900), elapsed: .milliseconds(2100)))
    }

    @Test func evidenceOverridesTheSuspensionLimit() {
        // A watchdog 15 s late because it was starved (evidence: no stop) still reports the stall.
        var detector = StallDetector(configuration: WatchdogConfiguration(threshold: .seconds(2)))
        _ = detector.evaluate(busySince: at(ms: 0), now: at(ms: 500), previousRoundAt: nil, stoppedFor: .zero)
        let late = detector.evaluate(busySince: at(ms: 0), now: at(ms: 15_500), previousRoundAt: at(ms: 500), stoppedFor: .zero)
        #expect(late == .stalled(since: at(ms: 0), elapsed: .milliseconds(15_500)))
    }
}
