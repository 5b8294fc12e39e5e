import StallwatchPolicy
import StallwatchReport
import Testing

/// A busy period that crossed the threshold and ended between two rounds (the watchdog ran late):
/// a stall all the same, reported once, never twice, never for a short period or stopped time.
@Suite struct StallAfterItEndedTests {
    @Test func periodNeverSeenIsReportedOnceWithItsRecordedLength() {
        var detector = StallDetector(configuration: configuration())
        #expect(detector.evaluate(busySince: nil, now: at(ms: 0), previousRoundAt: nil) == .idle)
        // Busy from 100 to 2600 ms while the watchdog was held up; it looks again at 2900.
        let ended = (since: at(ms: 100), end: at(ms: 2600))
        let first = detector.evaluate(busySince: nil, now: at(ms: 2900), previousRoundAt: at(ms: 0), stoppedFor: .zero,
                                      lastEnded: ended)
        #expect(first == .stalledAfterItEnded(since: at(ms: 100), duration: .milliseconds(2500)))
        #expect(detector.isInStall)
        let closed = detector.closeStallThatEnded(busySince: nil)
        #expect(closed?.duration == .milliseconds(2500))
        #expect(closed?.episode.start == at(ms: 100))
        #expect(!detector.isInStall)
        // The probe still remembers that period: it is not a stall a second time.
        let again = detector.evaluate(busySince: nil, now: at(ms: 3900), previousRoundAt: at(ms: 2900), stoppedFor: .zero,
                                      lastEnded: ended)
        #expect(again == .idle)
    }

    /// The process was stopped for 2.9 s while a 12 ms batch was under way; the round that judged
    /// the stop found the batch ended, and the next round (1 ms on, no stop) must not judge it again
    /// without the stop.
    @Test func periodThatSpannedAStopIsJudgedOnce() {
        var detector = StallDetector(configuration: configuration())
        #expect(detector.evaluate(busySince: at(ms: 90), now: at(ms: 100), previousRoundAt: nil) == .busy(elapsed: .milliseconds(10)))
        let ended = (since: at(ms: 95), end: at(ms: 3007))
        let stopRound = detector.evaluate(busySince: nil, now: at(ms: 3008), previousRoundAt: at(ms: 100),
                                          stoppedFor: .milliseconds(2900), lastEnded: ended)
        #expect(stopRound == .idle)
        let next = detector.evaluate(busySince: at(ms: 3008), now: at(ms: 3009), previousRoundAt: at(ms: 3008),
                                     stoppedFor: .zero, lastEnded: ended)
        #expect(next == .busy(elapsed: .milliseconds(1)))
        #expect(!detector.isInStall)
    }

    /// The same, with the batch's end landing just after the stop round's instant: both threads run
    /// again at SIGCONT, and the loop may end its batch while that round runs. The round cannot
    /// judge the period whole, but the next one must still leave the stop out (it reported a 3 s
    /// stall of a 12 ms batch, 1 of 5 stops, in fresh-clone CI runs).
    @Test func periodThatSpannedAStopAndEndedDuringTheStopRoundIsNoStall() {
        var detector = StallDetector(configuration: configuration())
        #expect(detector.evaluate(busySince: nil, now: at(ms: 80), previousRoundAt: nil) == .idle)
        let ended = (since: at(ms: 95), end: at(ms: 3009))
        let stopRound = detector.evaluate(busySince: nil, now: at(ms: 3008), previousRoundAt: at(ms: 80),
                                          stoppedFor: .milliseconds(2900), lastEnded: ended)
        #expect(stopRound == .idle)
        let next = detector.evaluate(busySince: at(ms: 3015), now: at(ms: 3030), previousRoundAt: at(ms: 3008),
                                     stoppedFor: .zero, lastEnded: ended)
        #expect(next == .busy(elapsed: .milliseconds(15)))
        #expect(!detector.isInStall)
    }

    /// A round held up past its instant (a slow event handler) sees a period that began and ended
    /// after that instant: not judged then, it is a stall at the next round.
    @Test func periodAfterTheRoundsInstantIsJudgedLater() {
        var detector = StallDetector(configuration: configuration())
        #expect(detector.evaluate(busySince: nil, now: at(ms: 0), previousRoundAt: nil) == .idle)
        let ended = (since: at(ms: 200), end: at(ms: 2800))
        #expect(detector.evaluate(busySince: nil, now: at(ms: 100), previousRoundAt: at(ms: 0), stoppedFor: .zero,
                                  lastEnded: ended) == .idle)
        let next = detector.evaluate(busySince: nil, now: at(ms: 3000), previousRoundAt: at(ms: 100), stoppedFor: .zero,
                                     lastEnded: ended)
        #expect(next == .stalledAfterItEnded(since: at(ms: 200), duration: .milliseconds(2600)))
    }

    @Test func periodSeenUnderTheThresholdThatEndedOverIt() {
        var detector = StallDetector(configuration: configuration())
        #expect(detector.evaluate(busySince: at(ms: 0), now: at(ms: 1500), previousRoundAt: nil) == .suspected(elapsed: .milliseconds(1500)))
        // The next round came late, after the period ended at 2300: the recorded end decides.
        let late = detector.evaluate(busySince: nil, now: at(ms: 3000), previousRoundAt: at(ms: 1500), stoppedFor: .zero,
                                     endedAt: at(ms: 2300), lastEnded: (at(ms: 0), at(ms: 2300)))
        #expect(late == .stalledAfterItEnded(since: at(ms: 0), duration: .milliseconds(2300)))
        #expect(detector.closeStallThatEnded(busySince: nil)?.duration == .milliseconds(2300))
    }

    @Test func newPeriodAlreadyBusyIsWatchedAfterTheClose() {
        var detector = StallDetector(configuration: configuration())
        _ = detector.evaluate(busySince: nil, now: at(ms: 0), previousRoundAt: nil)
        let first = detector.evaluate(busySince: at(ms: 2700), now: at(ms: 2800), previousRoundAt: at(ms: 0), stoppedFor: .zero,
                                      lastEnded: (at(ms: 100), at(ms: 2600)))
        #expect(first == .stalledAfterItEnded(since: at(ms: 100), duration: .milliseconds(2500)))
        _ = detector.closeStallThatEnded(busySince: at(ms: 2700))
        // The period that began at 2700 is watched from its own stamp: its wake times are set.
        #expect(detector.wakeTimes == [at(ms: 2700) + .milliseconds(1001), at(ms: 2700) + .milliseconds(2001)])
        let next = detector.evaluate(busySince: at(ms: 2700), now: at(ms: 4800), previousRoundAt: at(ms: 2800), stoppedFor: .zero,
                                     lastEnded: (at(ms: 100), at(ms: 2600)))
        #expect(next == .stalled(since: at(ms: 2700), elapsed: .milliseconds(2100)))
    }

    @Test func shortPeriodsAndTheThresholdItselfAreNoStall() {
        var detector = StallDetector(configuration: configuration())
        _ = detector.evaluate(busySince: nil, now: at(ms: 0), previousRoundAt: nil)
        #expect(detector.evaluate(busySince: nil, now: at(ms: 2500), previousRoundAt: at(ms: 0), stoppedFor: .zero,
                                  lastEnded: (at(ms: 100), at(ms: 2100))) == .idle)
    }

    @Test func stoppedTimeIsNotCountedAsBusy() {
        var detector = StallDetector(configuration: configuration())
        _ = detector.evaluate(busySince: nil, now: at(ms: 0), previousRoundAt: nil)
        // 2.5 s recorded, of which 1 s the process was stopped: 1.5 s busy, no stall.
        #expect(detector.evaluate(busySince: nil, now: at(ms: 2900), previousRoundAt: at(ms: 0), stoppedFor: .seconds(1),
                                  lastEnded: (at(ms: 100), at(ms: 2600))) == .idle)
    }

    @Test func reportedStallEndsTheUsualWayAndOnlyOnce() {
        var detector = StallDetector(configuration: configuration())
        _ = detector.evaluate(busySince: at(ms: 0), now: at(ms: 1000), previousRoundAt: nil)
        #expect(detector.evaluate(busySince: at(ms: 0), now: at(ms: 2100), previousRoundAt: at(ms: 1000))
                == .stalled(since: at(ms: 0), elapsed: .milliseconds(2100)))
        let ended = (since: at(ms: 0), end: at(ms: 2500))
        #expect(detector.evaluate(busySince: nil, now: at(ms: 3000), previousRoundAt: at(ms: 2100), stoppedFor: .zero,
                                  endedAt: ended.end, lastEnded: ended) == .ended(duration: .milliseconds(2500)))
        #expect(detector.evaluate(busySince: nil, now: at(ms: 4000), previousRoundAt: at(ms: 3000), stoppedFor: .zero,
                                  lastEnded: ended) == .idle)
    }

    @Test func endRecordedOnACoarseClockPastNowIsClampedToNow() {
        var detector = StallDetector(configuration: configuration())
        _ = detector.evaluate(busySince: nil, now: at(ms: 0), previousRoundAt: nil)
        let first = detector.evaluate(busySince: nil, now: at(ms: 2600), previousRoundAt: at(ms: 0), stoppedFor: .zero,
                                      lastEnded: (at(ms: 100), at(ms: 2603)))
        #expect(first == .stalledAfterItEnded(since: at(ms: 100), duration: .milliseconds(2500)))
    }
}

/// A pinged loop's long tick is offered as its last ended period (its start is no ping stamp):
/// a tick no look saw begin is a stall; a tick an episode already reported, or one that spanned a
/// stop of the process, is not.
@Suite struct TickAfterItEndedTests {
    @Test func tickThatNoLookSawBeginIsAStallWithItsBounds() {
        var detector = StallDetector(configuration: configuration())
        _ = detector.evaluate(busySince: nil, now: at(ms: 0), previousRoundAt: nil)
        // A look at 1800 saw the loop busy (its stamp); the tick began at 100 and ended at 2600.
        _ = detector.evaluate(busySince: at(ms: 1800), now: at(ms: 1800), previousRoundAt: at(ms: 0), stoppedFor: .zero)
        let tick = (since: at(ms: 100), end: at(ms: 2600))
        let first = detector.evaluate(busySince: nil, now: at(ms: 2700), previousRoundAt: at(ms: 1800), stoppedFor: .zero,
                                      endedAt: at(ms: 2600), lastEnded: tick)
        #expect(first == .stalledAfterItEnded(since: at(ms: 100), duration: .milliseconds(2500)))
        #expect(detector.closeStallThatEnded(busySince: nil)?.duration == .milliseconds(2500))
        #expect(detector.evaluate(busySince: nil, now: at(ms: 2800), previousRoundAt: at(ms: 2700), stoppedFor: .zero,
                                  lastEnded: tick) == .idle)
    }

    @Test func tickOfAReportedEpisodeIsNotReportedAgain() {
        var detector = StallDetector(configuration: configuration())
        _ = detector.evaluate(busySince: at(ms: 150), now: at(ms: 200), previousRoundAt: nil)
        #expect(detector.evaluate(busySince: at(ms: 150), now: at(ms: 2200), previousRoundAt: at(ms: 200), stoppedFor: .zero)
                == .stalled(since: at(ms: 150), elapsed: .milliseconds(2050)))
        detector.correctStart(to: at(ms: 100))
        let tick = (since: at(ms: 100), end: at(ms: 2600))
        #expect(detector.evaluate(busySince: nil, now: at(ms: 2700), previousRoundAt: at(ms: 2200), stoppedFor: .zero,
                                  endedAt: at(ms: 2600), lastEnded: tick) == .ended(duration: .milliseconds(2500)))
        // The ping's stamp (150) is not the tick's start (100): only the covered time tells them apart.
        #expect(detector.evaluate(busySince: nil, now: at(ms: 2800), previousRoundAt: at(ms: 2700), stoppedFor: .zero,
                                  lastEnded: tick) == .idle)
        // A later long tick is judged on its own.
        #expect(detector.evaluate(busySince: nil, now: at(ms: 6000), previousRoundAt: at(ms: 2800), stoppedFor: .zero,
                                  lastEnded: (at(ms: 3000), at(ms: 5500))) == .stalledAfterItEnded(since: at(ms: 3000), duration: .milliseconds(2500)))
    }

    @Test func tickThatSpannedAStopIsNoStall() {
        var detector = StallDetector(configuration: configuration())
        _ = detector.evaluate(busySince: nil, now: at(ms: 0), previousRoundAt: nil)
        // No round for 30 s: the process was stopped (no evidence given), the tick spanned it.
        #expect(detector.evaluate(busySince: nil, now: at(ms: 30_000), previousRoundAt: at(ms: 0)) == .resumedAfterSuspension)
        #expect(detector.evaluate(busySince: nil, now: at(ms: 30_100), previousRoundAt: at(ms: 30_000), stoppedFor: .zero,
                                  lastEnded: (at(ms: 100), at(ms: 30_050))) == .idle)
    }
}
