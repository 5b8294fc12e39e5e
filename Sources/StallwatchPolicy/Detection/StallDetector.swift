/// Decides, round by round, whether one loop is stalled: matrix's run-loop-observer check as a
/// pure state machine. Keep one detector per monitored loop.
///
/// The probe publishes "busy since" (set at the first wake after idling, cleared on idle); the
/// watchdog passes that stamp, the current instant and the previous round's instant to
/// ``evaluate(busySince:now:previousRoundAt:stoppedFor:)``.
public struct StallDetector: Sendable {
    /// The busy period being watched: the probe's stamp, the instant we measure from (equal to
    /// the stamp unless re-based after a suspension), and how many rounds it has been stalled.
    private struct Tracked: Sendable {
        var probeStamp: MonotonicInstant
        var measuredFrom: MonotonicInstant
        var stalledRounds: Int
    }

    /// Busy for strictly longer than this is a stall.
    public let threshold: Duration
    /// Busy for strictly longer than this is suspected (sampling starts).
    public let suspicionThreshold: Duration
    /// A gap between rounds strictly longer than this means the process was stopped.
    public let suspensionLimit: Duration
    private var tracked: Tracked?

    /// Creates a detector from a (validated) configuration.
    public init(configuration: WatchdogConfiguration) {
        self.threshold = configuration.threshold
        self.suspicionThreshold = configuration.threshold * configuration.suspicionFraction
        self.suspensionLimit = configuration.suspensionLimit
    }

    /// Whether a stall has been reported and has not ended yet.
    public var isInStall: Bool { (tracked?.stalledRounds ?? 0) > 0 }

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
    /// - Returns: one observation. When a reported stall ends and a new busy period has already
    ///   begun, this round returns ``StallObservation/ended(duration:)`` and the new period is
    ///   judged from the next round on.
    public mutating func evaluate(
        busySince: MonotonicInstant?,
        now: MonotonicInstant,
        previousRoundAt: MonotonicInstant?,
        stoppedFor: Duration? = nil
    ) -> StallObservation {
        var shift: Duration = .zero
        if let stopped = stoppedFor {
            shift = max(stopped, .zero)
        } else if let previous = previousRoundAt, now - previous > suspensionLimit {
            // Time spent stopped is not time spent stalled; matrix resets the stamp the same way.
            tracked = busySince.map { Tracked(probeStamp: $0, measuredFrom: now, stalledRounds: 0) }
            return .resumedAfterSuspension
        }
        guard let stamp = busySince else {
            defer { tracked = nil }
            if let current = tracked, current.stalledRounds > 0 {
                return .ended(duration: nonNegative(now - shifted(current.measuredFrom, by: shift, now: now)))
            }
            return .idle
        }
        if let current = tracked, current.probeStamp != stamp {
            tracked = Tracked(probeStamp: stamp, measuredFrom: stamp, stalledRounds: 0)
            if current.stalledRounds > 0 {
                let end = min(stamp, now)
                return .ended(duration: nonNegative(end - current.measuredFrom))
            }
        }
        var current = tracked ?? Tracked(probeStamp: stamp, measuredFrom: stamp, stalledRounds: 0)
        current.measuredFrom = shifted(current.measuredFrom, by: shift, now: now)
        // A stamp slightly after `now` is a benign race with the probe, not negative busy time.
        let elapsed = nonNegative(now - current.measuredFrom)
        defer { tracked = current }
        if elapsed > threshold {
            current.stalledRounds += 1
            if current.stalledRounds == 1 {
                return .stalled(since: current.measuredFrom, elapsed: elapsed)
            }
            return .stillStalled(since: current.measuredFrom, elapsed: elapsed, round: current.stalledRounds)
        }
        return elapsed > suspicionThreshold ? .suspected(elapsed: elapsed) : .busy(elapsed: elapsed)
    }

    /// Forgets any busy period, e.g. when the loop is unregistered and registered again.
    public mutating func reset() {
        tracked = nil
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
