import StallwatchReport
/// Decides, round by round, whether one loop is stalled: matrix's run-loop-observer check as a
/// pure state machine. Keep one detector per monitored loop.
///
/// The probe publishes "busy since" (set at the first wake after idling, cleared on idle); the
/// watchdog passes that stamp, the current instant and the previous round's instant to
/// ``evaluate(busySince:now:previousRoundAt:stoppedFor:endedAt:)``.
///
/// The detector is the one owner of a stall's state: the busy period it watches, the
/// ``StallEpisode`` once that period crossed the threshold (with its report), and the instants the
/// watchdog must wake at to see it become suspect or stalled on time (``wakeTimes``).
package struct StallDetector: Sendable {
    /// The busy period being watched: the probe's stamp, the instant we measure from (equal to
    /// the stamp unless re-based after a suspension), and its episode once it is a stall.
    private struct Tracked: Sendable {
        var probeStamp: MonotonicInstant
        var measuredFrom: MonotonicInstant
        var episode: StallEpisode?
        var stalledRounds: Int { episode?.stalledRounds ?? 0 }
    }

    /// Busy for strictly longer than this is a stall.
    package let threshold: Duration
    /// Busy for strictly longer than this is suspected (sampling starts).
    package let suspicionThreshold: Duration
    /// A gap between rounds strictly longer than this means the process was stopped.
    package let suspensionLimit: Duration
    private var tracked: Tracked? {
        didSet {
            if let old = oldValue, old.probeStamp != tracked?.probeStamp { lastClosedStamp = old.probeStamp }
        }
    }
    /// The stamp of the last busy period that stopped being watched (or was reported after it
    /// ended): the probe's record of its end must not make it a stall a second time.
    private var lastClosedStamp: MonotonicInstant?
    /// The stamp of the last ended period ``stallThatEnded`` found no stall: its verdict, made with
    /// that round's stopped time, is final.
    private var judgedEndedStamp: MonotonicInstant?
    /// A stop a round subtracted from an ended period it could not judge whole (the period's end
    /// came after the round's instant): the round that judges it later, with no stop of its own,
    /// subtracts it still.
    private var stopOfUnjudged: (stamp: MonotonicInstant, stopped: Duration)?
    /// The end of the last episode closed, or the instant a suspension was noticed: a period the
    /// probe records that began before it (a pinged loop's tick, whose start is no probe stamp)
    /// was that episode or spanned the stop, and is never a stall of its own.
    private var coveredUntil: MonotonicInstant?
    /// The episode the last ``StallObservation/ended(duration:)`` closed, until taken.
    private var endedEpisode: StallEpisode?

    /// Creates a detector from a (validated) configuration.
    package init(configuration: WatchdogConfiguration) {
        self.threshold = configuration.threshold
        self.suspicionThreshold = configuration.threshold * configuration.suspicionFraction
        self.suspensionLimit = configuration.suspensionLimit
    }

    /// Whether a stall has been reported and has not ended yet.
    package var isInStall: Bool { (tracked?.stalledRounds ?? 0) > 0 }

    /// The probe stamp of the busy period being watched (to ask the probe when it ended).
    package var watchedStamp: MonotonicInstant? { tracked?.probeStamp }

    /// The stall in progress, if any.
    package var episode: StallEpisode? { tracked?.episode }

    /// Records the report made for (or updated in) the episode in progress; ignored when there is none.
    package mutating func record(report: StallReport) {
        tracked?.episode?.report = report
    }

    /// Moves the episode's start to `start` when the loop itself said when its stalled job or tick
    /// began (a NIO tick's start, a pool job's start told by its thread's CPU clock). The probe's
    /// stamp stays what identifies the busy period.
    package mutating func correctStart(to start: MonotonicInstant) {
        guard var current = tracked else { return }
        current.measuredFrom = start
        current.episode?.start = start
        tracked = current
    }

    /// Moves the start of the busy period being watched earlier, to `start`, when the probe's stamp
    /// is only an upper bound of it (a ping is posted after the loop began its stalled work; the
    /// previous answer is a lower bound). Ignored for another period than the one stamped `stamp`,
    /// after a re-base (a stop), and for later instants.
    package mutating func refineStart(ofPeriodSince stamp: MonotonicInstant, to start: MonotonicInstant) {
        guard var current = tracked, current.probeStamp == stamp, current.measuredFrom == stamp, start < stamp else { return }
        current.measuredFrom = start
        current.episode?.start = start
        tracked = current
    }

    /// The episode the last ``StallObservation/ended(duration:)`` (or a
    /// ``StallObservation/resumedAfterSuspension`` that cut one short) closed; taken once.
    package mutating func takeEndedEpisode() -> StallEpisode? {
        defer { endedEpisode = nil }
        return endedEpisode
    }

    /// The instants at which the busy period being watched becomes suspect and stalled (each
    /// 1 ms past its limit: both are strict), while it is neither yet. The watchdog wakes at them,
    /// so a stall is seen when it crosses the threshold, not up to a period later.
    package var wakeTimes: [MonotonicInstant] {
        var times: [MonotonicInstant] = []
        forEachWakeTime { times.append($0) }
        return times
    }

    /// ``wakeTimes`` one by one, without an array: the watchdog asks every round.
    package func forEachWakeTime(_ body: (MonotonicInstant) -> Void) {
        guard let current = tracked, current.episode == nil else { return }
        body(current.measuredFrom + suspicionThreshold + .milliseconds(1))
        body(current.measuredFrom + threshold + .milliseconds(1))
    }

    /// Evaluates one round.
    ///
    /// - Parameters:
    ///   - busySince: the probe's busy stamp, `nil` when the loop is idle.
    ///   - now: this round's instant.
    ///   - previousRoundAt: the previous round's instant, `nil` on the first round.
    ///   - stoppedFor: how long the process was stopped (SIGSTOP, a debugger) since the previous
    ///     round, as judged from evidence by the caller; that time is not counted as busy time.
    ///     `nil` when there is no evidence: then a gap longer than ``suspensionLimit`` is taken as a
    ///     stop and the busy period is re-based to `now`.
    ///   - endedAt: when the busy period that began at the stamp last seen ended, if the probe
    ///     recorded it: the stall's end is then exact rather than this round's `now`.
    ///   - lastEnded: the last busy period the probe saw end (its stamp and end), whichever it
    ///     was: one that crossed the threshold between two rounds, unseen or seen only while under
    ///     it (a starved or blocked watchdog), is still a stall (``StallObservation/stalledAfterItEnded(since:duration:)``).
    /// - Returns: one observation. When a reported stall ends and a new busy period has already
    ///   begun, this round returns ``StallObservation/ended(duration:)`` and the new period is
    ///   judged from the next round on.
    package mutating func evaluate(
        busySince: MonotonicInstant?,
        now: MonotonicInstant,
        previousRoundAt: MonotonicInstant?,
        stoppedFor: Duration? = nil,
        endedAt: MonotonicInstant? = nil,
        lastEnded: (since: MonotonicInstant, end: MonotonicInstant)? = nil
    ) -> StallObservation {
        var shift: Duration = .zero
        if let stopped = stoppedFor {
            shift = max(stopped, .zero)
        } else if let previous = previousRoundAt, now - previous > suspensionLimit {
            // Time spent stopped is not time spent stalled; matrix resets the stamp the same way.
            endedEpisode = tracked?.episode
            tracked = busySince.map { Tracked(probeStamp: $0, measuredFrom: now) }
            coveredUntil = now
            return .resumedAfterSuspension
        }
        if let unseen = stallThatEnded(lastEnded, busySince: busySince, shift: shift, now: now) { return unseen }
        guard let stamp = busySince else {
            defer { tracked = nil }
            if let current = tracked, let episode = current.episode {
                let start = shifted(current.measuredFrom, by: shift, now: now)
                let end = Self.end(recorded: endedAt, from: start, latest: now)
                endedEpisode = episode
                coveredUntil = end
                return .ended(duration: nonNegative(end - start))
            }
            return .idle
        }
        if let current = tracked, current.probeStamp != stamp {
            tracked = Tracked(probeStamp: stamp, measuredFrom: stamp)
            if let episode = current.episode {
                let end = Self.end(recorded: endedAt, from: current.measuredFrom, latest: min(stamp, now))
                endedEpisode = episode
                coveredUntil = end
                return .ended(duration: nonNegative(end - current.measuredFrom))
            }
        }
        var current = tracked ?? Tracked(probeStamp: stamp, measuredFrom: stamp)
        current.measuredFrom = shifted(current.measuredFrom, by: shift, now: now)
        current.episode?.start = current.measuredFrom
        // A stamp slightly after `now` is a benign race with the probe, not negative busy time.
        let elapsed = nonNegative(now - current.measuredFrom)
        defer { tracked = current }
        if elapsed > threshold {
            if current.episode == nil {
                current.episode = StallEpisode(start: current.measuredFrom)
                return .stalled(since: current.measuredFrom, elapsed: elapsed)
            }
            current.episode?.stalledRounds += 1
            return .stillStalled(since: current.measuredFrom, elapsed: elapsed, round: current.stalledRounds)
        }
        return elapsed > suspicionThreshold ? .suspected(elapsed: elapsed) : .busy(elapsed: elapsed)
    }

    /// A busy period that crossed the threshold and ended between two rounds: the watchdog never
    /// saw it stalled, because it ran late (starved of CPU, or held up by a slow event handler).
    /// It becomes an episode, already over, that ``closeStallThatEnded(busySince:)`` closes once
    /// its report is made. Stopped time (`shift`) is not counted, as for any busy period.
    private mutating func stallThatEnded(_ ended: (since: MonotonicInstant, end: MonotonicInstant)?,
                                         busySince: MonotonicInstant?, shift: Duration,
                                         now: MonotonicInstant) -> StallObservation? {
        guard let ended, ended.since != busySince, ended.since != lastClosedStamp, ended.since != judgedEndedStamp,
              ended.end >= ended.since else {
            return nil
        }
        if let covered = coveredUntil, ended.since < covered, tracked?.probeStamp != ended.since { return nil }
        // The probe's coarse clock may put the end a tick past this round's precise `now`.
        let end = min(ended.end, now)
        var from = ended.since
        if let current = tracked {
            // A stall already reported ends the usual way; another one in progress closes first.
            guard current.episode == nil else { return nil }
            if current.probeStamp == ended.since { from = current.measuredFrom }
        }
        let earlierStop = stopOfUnjudged?.stamp == ended.since ? stopOfUnjudged?.stopped ?? .zero : .zero
        let start = shifted(from, by: shift + earlierStop, now: end)
        let duration = nonNegative(end - start)
        guard duration > threshold else {
            // Judged once, with this round's stop: the next round, with none, must not find the
            // stopped time in it again (a SIGSTOP mid-period made a 3 s "stall" of a 12 ms batch).
            // Only a period that ended by this round's instant was judged whole: a round held up
            // (a slow event handler) sees periods that began and ended after its `now`. Nor was one
            // whose end came during this round (the loop runs again at SIGCONT as the watchdog
            // does): its stop is kept for the round that judges it.
            if ended.end <= now {
                judgedEndedStamp = ended.since
            } else if shift > .zero {
                stopOfUnjudged = (ended.since, shift + earlierStop)
            }
            return nil
        }
        tracked = Tracked(probeStamp: ended.since, measuredFrom: start, episode: StallEpisode(start: start))
        unseenEnd = end
        return .stalledAfterItEnded(since: start, duration: duration)
    }

    /// The end of the episode ``StallObservation/stalledAfterItEnded(since:duration:)`` opened.
    private var unseenEnd: MonotonicInstant?

    /// Closes the episode ``StallObservation/stalledAfterItEnded(since:duration:)`` opened (with
    /// the report recorded in it since) and watches `busySince`, the loop's current busy period,
    /// if any. Returns the episode and its duration; `nil` when no such episode is open.
    package mutating func closeStallThatEnded(busySince: MonotonicInstant?) -> (episode: StallEpisode, duration: Duration)? {
        guard let end = unseenEnd, let current = tracked, let episode = current.episode else { return nil }
        unseenEnd = nil
        tracked = busySince.map { Tracked(probeStamp: $0, measuredFrom: $0) }
        coveredUntil = end
        return (episode, episode.duration(endingAt: end))
    }

    /// Forgets any busy period, e.g. when the loop is unregistered and registered again.
    package mutating func reset() {
        tracked = nil
        endedEpisode = nil
        unseenEnd = nil
    }

    /// Ends the episode in progress at `now` (the loop was unregistered, the watchdog stops):
    /// returns it, closed, or `nil` when there was none.
    package mutating func cutShort(at now: MonotonicInstant) -> (episode: StallEpisode, duration: Duration)? {
        defer { reset() }
        guard let current = tracked, let episode = current.episode else { return nil }
        return (episode, episode.duration(endingAt: now))
    }

    /// The recorded end when it falls inside the episode (a probe's record of an older period
    /// does not), else the latest instant the episode can have lasted to.
    private static func end(recorded: MonotonicInstant?, from start: MonotonicInstant,
                            latest: MonotonicInstant) -> MonotonicInstant {
        guard let recorded, recorded >= start, recorded <= latest else { return latest }
        return recorded
    }

    /// A start moved later by the time the process was stopped, never past `now`.
    private func shifted(_ start: MonotonicInstant, by shift: Duration, now: MonotonicInstant) -> MonotonicInstant {
        guard shift > .zero else { return start }
        return min(start + shift, now)
    }

    private func nonNegative(_ duration: Duration) -> Duration {
        max(duration, .zero)
    }
}
