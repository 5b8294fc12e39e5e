import StallwatchReport
/// matrix's "cultivate" logic for sustained high CPU, measured in the readings' own wall time
/// (no clock): start tracking above the start fraction of one core, abandon when the running
/// average drops below the abandon share of it, fire after the minimum duration, then cool down.
package struct SustainedCPUTracker: Sendable, Equatable {
    /// Where the tracker is.
    package enum Phase: Sendable, Equatable {
        /// Not tracking.
        case idle
        /// Accumulating since usage went high.
        case tracking(cpu: Duration, wall: Duration)
        /// After firing; no tracking until `remaining` wall time has passed.
        case coolingDown(remaining: Duration)
    }

    /// The current phase.
    package private(set) var phase: Phase = .idle
    private let settings: CPUConfiguration

    /// Creates a tracker.
    package init(settings: CPUConfiguration) {
        self.settings = settings
    }

    /// Feeds one accepted reading; returns the event when the sustained condition fires.
    package mutating func ingest(cpu: Duration, wall: Duration) -> CPUEvent? {
        switch phase {
        case .coolingDown(let remaining):
            // The reading that finishes the cool-down is still part of it.
            let left = remaining - wall
            phase = left > .zero ? .coolingDown(remaining: left) : .idle
            return nil
        case .idle:
            if cpu / wall > settings.sustainedStartFraction {
                phase = .tracking(cpu: cpu, wall: wall)
            }
            return nil
        case .tracking(let trackedCPU, let trackedWall):
            return advance(cpu: trackedCPU + cpu, wall: trackedWall + wall)
        }
    }

    private mutating func advance(cpu: Duration, wall: Duration) -> CPUEvent? {
        let average = cpu / wall
        if average < settings.sustainedStartFraction * settings.sustainedAbandonRatio {
            phase = .idle
            return nil
        }
        if wall >= settings.sustainedMinimumDuration {
            phase = settings.sustainedCoolDown > .zero ? .coolingDown(remaining: settings.sustainedCoolDown) : .idle
            return .sustainedHigh(average: average, duration: wall)
        }
        phase = .tracking(cpu: cpu, wall: wall)
        return nil
    }
}
