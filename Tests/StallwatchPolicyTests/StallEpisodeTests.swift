import StallwatchPolicy
import StallwatchReport
import Testing

/// The detector as the one owner of a stall: its episode, report, deadlines and exact end.
@Suite struct StallEpisodeTests {
    private func report(_ id: String, version: Int = 0) -> StallReport {
        StallReport(kind: .stall, id: id, startTimeUnixNanoseconds: 0, duration: .zero, durationIsFinal: false,
                    sequenceInStall: version, threadCount: 1, configuration: configuration())
    }

    @Test func wakeTimesAreTheSuspicionAndThresholdInstantsUntilTheStall() {
        var detector = StallDetector(configuration: configuration())
        #expect(detector.wakeTimes.isEmpty)
        _ = detector.evaluate(busySince: at(ms: 100), now: at(ms: 200), previousRoundAt: nil)
        #expect(detector.wakeTimes == [at(ms: 1101), at(ms: 2101)])
        _ = detector.evaluate(busySince: at(ms: 100), now: at(ms: 2101), previousRoundAt: at(ms: 200))
        #expect(detector.wakeTimes.isEmpty, "a stall in progress needs no threshold wake-up")
    }

    @Test func theEpisodeKeepsItsOneReportUntilItEnds() throws {
        var detector = StallDetector(configuration: configuration())
        #expect(detector.evaluate(busySince: at(ms: 0), now: at(ms: 2100), previousRoundAt: nil)
                == .stalled(since: at(ms: 0), elapsed: .milliseconds(2100)))
        detector.record(report: report("a"))
        _ = detector.evaluate(busySince: at(ms: 0), now: at(ms: 3100), previousRoundAt: at(ms: 2100))
        detector.record(report: report("a", version: 1))
        #expect(detector.episode?.report?.id == "a")
        #expect(detector.episode?.reportVersions == 2)
        #expect(detector.evaluate(busySince: nil, now: at(ms: 4000), previousRoundAt: at(ms: 3100)) == .ended(duration: .seconds(4)))
        let taken = detector.takeEndedEpisode()
        let ended = try #require(taken)
        #expect(ended.report?.id == "a")
        #expect(ended.stalledRounds == 2)
        #expect(detector.takeEndedEpisode() == nil, "taken once")
        #expect(detector.episode == nil)
    }

    @Test func theRecordedEndIsTheEndNotTheRoundThatNoticed() {
        var detector = StallDetector(configuration: configuration())
        _ = detector.evaluate(busySince: at(ms: 0), now: at(ms: 2100), previousRoundAt: nil)
        #expect(detector.evaluate(busySince: nil, now: at(ms: 3000), previousRoundAt: at(ms: 2100), endedAt: at(ms: 2300))
                == .ended(duration: .milliseconds(2300)))
    }

    @Test func aRecordedEndOutsideTheEpisodeIsIgnored() {
        var detector = StallDetector(configuration: configuration())
        _ = detector.evaluate(busySince: at(ms: 1000), now: at(ms: 3100), previousRoundAt: nil)
        // An end from an older busy period (before this one began) says nothing about this one.
        #expect(detector.evaluate(busySince: nil, now: at(ms: 3500), previousRoundAt: at(ms: 3100), endedAt: at(ms: 500))
                == .ended(duration: .milliseconds(2500)))
    }

    @Test func aCorrectedStartMovesTheEpisode() {
        var detector = StallDetector(configuration: configuration())
        _ = detector.evaluate(busySince: at(ms: 1000), now: at(ms: 3100), previousRoundAt: nil)
        detector.correctStart(to: at(ms: 960))
        #expect(detector.episode?.start == at(ms: 960))
        #expect(detector.evaluate(busySince: nil, now: at(ms: 3300), previousRoundAt: at(ms: 3100), endedAt: at(ms: 3200))
                == .ended(duration: .milliseconds(2240)))
    }

    @Test func cuttingShortClosesTheEpisodeOnce() throws {
        var detector = StallDetector(configuration: configuration())
        #expect(detector.cutShort(at: at(ms: 10)) == nil)
        _ = detector.evaluate(busySince: at(ms: 0), now: at(ms: 2100), previousRoundAt: nil)
        detector.record(report: report("b"))
        let closed = detector.cutShort(at: at(ms: 2500))
        let cut = try #require(closed)
        #expect(cut.episode.report?.id == "b")
        #expect(cut.duration == .milliseconds(2500))
        #expect(detector.cutShort(at: at(ms: 2600)) == nil)
    }

    @Test func aReportWithoutAnEpisodeIsNotKept() {
        var detector = StallDetector(configuration: configuration())
        _ = detector.evaluate(busySince: at(ms: 0), now: at(ms: 500), previousRoundAt: nil)
        detector.record(report: report("c"))
        #expect(detector.episode == nil)
    }

    @Test func theScheduleIsChosenForTheLatencyGoal() {
        let long = DetectionSchedule(configuration: configuration(threshold: .seconds(2)))
        #expect(long.pingPeriod == .milliseconds(40))
        #expect(long.poolScanPeriod == .milliseconds(40))
        let short = DetectionSchedule(configuration: WatchdogConfiguration(threshold: .milliseconds(40)))
        #expect(short.pingPeriod == .milliseconds(20), "a default period shorter than the goal's is kept")
        let chosen = DetectionSchedule(configuration: WatchdogConfiguration(threshold: .seconds(2), checkPeriod: .milliseconds(500),
                                                                            poolScanPeriod: .milliseconds(1500)))
        #expect(chosen.pingPeriod == .milliseconds(500), "a configured period is the user's choice")
        #expect(chosen.poolScanPeriod == .milliseconds(1500))
    }
}

@Suite struct RefinedStartTests {
    @Test func aPingStampIsRefinedEarlierOnlyForItsOwnPeriod() {
        var detector = StallDetector(configuration: configuration())
        _ = detector.evaluate(busySince: at(ms: 1000), now: at(ms: 1100), previousRoundAt: nil)
        detector.refineStart(ofPeriodSince: at(ms: 900), to: at(ms: 880))
        #expect(detector.wakeTimes.last == at(ms: 3001), "another period's estimate is ignored")
        detector.refineStart(ofPeriodSince: at(ms: 1000), to: at(ms: 1020))
        #expect(detector.wakeTimes.last == at(ms: 3001), "never later than the stamp")
        detector.refineStart(ofPeriodSince: at(ms: 1000), to: at(ms: 980))
        #expect(detector.wakeTimes.last == at(ms: 2981))
        #expect(detector.evaluate(busySince: at(ms: 1000), now: at(ms: 2981), previousRoundAt: at(ms: 1100))
                == .stalled(since: at(ms: 980), elapsed: .milliseconds(2001)))
    }
}
