import StallwatchPolicy
import StallwatchReport
import Testing

@Suite struct StallDetectorTests {
    /// Runs rounds every `period` ms from `start` while busy since `since`, returning observations.
    private func rounds(
        _ detector: inout StallDetector, since: MonotonicInstant?, from start: Int64, to end: Int64, every period: Int64
    ) -> [StallObservation] {
        var result: [StallObservation] = []
        var previous: MonotonicInstant?
        for ms in stride(from: start, through: end, by: Int(period)) {
            result.append(detector.evaluate(busySince: since, now: at(ms: ms), previousRoundAt: previous))
            previous = at(ms: ms)
        }
        return result
    }

    @Test func idleLoopIsIdle() {
        var detector = StallDetector(configuration: configuration())
        #expect(detector.evaluate(busySince: nil, now: at(ms: 1000), previousRoundAt: nil) == .idle)
    }

    @Test func exactlyThresholdIsNotStalled() {
        var detector = StallDetector(configuration: configuration())
        let observation = detector.evaluate(busySince: at(ms: 0), now: at(ms: 2000), previousRoundAt: at(ms: 1000))
        #expect(observation == .suspected(elapsed: .seconds(2)))
        let next = detector.evaluate(busySince: at(ms: 0), now: at(ms: 2001), previousRoundAt: at(ms: 2000))
        #expect(next == .stalled(since: at(ms: 0), elapsed: .milliseconds(2001)))
    }

    @Test func busySuspectedThenStalledOnceThenEnded() {
        var detector = StallDetector(configuration: configuration())
        let observed = rounds(&detector, since: at(ms: 0), from: 500, to: 3500, every: 1000)
        #expect(observed == [
            .busy(elapsed: .milliseconds(500)),
            .suspected(elapsed: .milliseconds(1500)),
            .stalled(since: at(ms: 0), elapsed: .milliseconds(2500)),
            .stillStalled(since: at(ms: 0), elapsed: .milliseconds(3500), round: 2),
        ])
        #expect(detector.isInStall)
        #expect(detector.evaluate(busySince: nil, now: at(ms: 4500), previousRoundAt: at(ms: 3500)) == .ended(duration: .milliseconds(4500)))
        #expect(!detector.isInStall)
        #expect(detector.evaluate(busySince: nil, now: at(ms: 5500), previousRoundAt: at(ms: 4500)) == .idle)
    }

    @Test func oneStallProducesExactlyOneStalledObservation() {
        var detector = StallDetector(configuration: configuration())
        let observed = rounds(&detector, since: at(ms: 0), from: 1000, to: 60_000, every: 1000)
        let firsts = observed.filter { if case .stalled = $0 { return true } else { return false } }
        #expect(firsts.count == 1)
    }

    @Test func newBusyStampEndsReportedStall() {
        var detector = StallDetector(configuration: configuration())
        _ = rounds(&detector, since: at(ms: 0), from: 1000, to: 3000, every: 1000)
        // The loop went idle at some point and woke again at 3200: the stall lasted ≤ 3.2 s.
        let observation = detector.evaluate(busySince: at(ms: 3200), now: at(ms: 4000), previousRoundAt: at(ms: 3000))
        #expect(observation == .ended(duration: .milliseconds(3200)))
        // The new busy period is then judged on its own.
        let next = detector.evaluate(busySince: at(ms: 3200), now: at(ms: 5000), previousRoundAt: at(ms: 4000))
        #expect(next == .suspected(elapsed: .milliseconds(1800)))
    }

    @Test func shortBusyPeriodsEndingQuietlyAreIdle() {
        var detector = StallDetector(configuration: configuration())
        #expect(detector.evaluate(busySince: at(ms: 0), now: at(ms: 1500), previousRoundAt: nil) == .suspected(elapsed: .milliseconds(1500)))
        #expect(detector.evaluate(busySince: nil, now: at(ms: 2500), previousRoundAt: at(ms: 1500)) == .idle)
    }

    @Test func twelveSecondGapResetsAndNeverReportsTheStoppedTime() {
        var detector = StallDetector(configuration: configuration())
        #expect(detector.evaluate(busySince: at(ms: 0), now: at(ms: 500), previousRoundAt: nil) == .busy(elapsed: .milliseconds(500)))
        // The process was stopped for 12 s: the loop looks busy for 12.5 s but is not stalled.
        #expect(detector.evaluate(busySince: at(ms: 0), now: at(ms: 12_500), previousRoundAt: at(ms: 500)) == .resumedAfterSuspension)
        // Re-based to the resume instant: 1 s later it is merely busy.
        #expect(detector.evaluate(busySince: at(ms: 0), now: at(ms: 13_500), previousRoundAt: at(ms: 12_500)) == .busy(elapsed: .seconds(1)))
        // If it really stays stuck after the resume, that is a stall, measured from the resume.
        #expect(detector.evaluate(busySince: at(ms: 0), now: at(ms: 14_600), previousRoundAt: at(ms: 13_500)) == .stalled(since: at(ms: 12_500), elapsed: .milliseconds(2100)))
    }

    @Test func suspensionDuringReportedStallEndsItSilently() {
        var detector = StallDetector(configuration: configuration())
        _ = rounds(&detector, since: at(ms: 0), from: 1000, to: 3000, every: 1000)
        #expect(detector.isInStall)
        #expect(detector.evaluate(busySince: nil, now: at(ms: 20_000), previousRoundAt: at(ms: 3000)) == .resumedAfterSuspension)
        #expect(!detector.isInStall)
        #expect(detector.evaluate(busySince: nil, now: at(ms: 21_000), previousRoundAt: at(ms: 20_000)) == .idle)
    }

    @Test func gapOfExactlyTheLimitIsNotASuspension() {
        var detector = StallDetector(configuration: configuration())
        let observation = detector.evaluate(busySince: at(ms: 0), now: at(ms: 10_000), previousRoundAt: at(ms: 0))
        #expect(observation == .stalled(since: at(ms: 0), elapsed: .seconds(10)))
    }

    @Test func stampAfterNowCountsAsZeroElapsed() {
        var detector = StallDetector(configuration: configuration())
        #expect(detector.evaluate(busySince: at(ms: 101), now: at(ms: 100), previousRoundAt: nil) == .busy(elapsed: .zero))
    }

    @Test func millisecondThreshold() throws {
        let config = try WatchdogConfiguration(threshold: .milliseconds(20), sampleInterval: .milliseconds(1)).validated()
        var detector = StallDetector(configuration: config)
        #expect(detector.evaluate(busySince: at(ms: 0), now: at(ms: 20), previousRoundAt: nil) == .suspected(elapsed: .milliseconds(20)))
        #expect(detector.evaluate(busySince: at(ms: 0), now: at(ms: 30), previousRoundAt: at(ms: 20)) == .stalled(since: at(ms: 0), elapsed: .milliseconds(30)))
    }

    @Test func samplingWish() {
        #expect(StallObservation.suspected(elapsed: .seconds(1)).wantsSampling(sampleContinuously: false))
        #expect(!StallObservation.busy(elapsed: .seconds(1)).wantsSampling(sampleContinuously: false))
        #expect(StallObservation.idle.wantsSampling(sampleContinuously: true))
    }
}
