import StallwatchReport
/// Tells a loop that stays busy without ever stalling: for longer than `window` its thread wants a
/// core all the time (on one, or runnable and waiting for one), or its pings keep waiting though
/// less than the stall threshold, with the same stack
/// recurring in the samples taken meanwhile. The case a stall threshold never sees: a task that
/// re-enqueues itself on its event loop, a loop spinning in small slices.
package struct BusyLoopDetector: Sendable {
    /// How long a loop must stay busy before it is reported.
    package let window: Duration
    /// The share of a round the thread must spend wanting a core (running, or runnable and waiting
    /// on a run queue) to count as busy. Waiting counts: on a loaded machine a spinning loop gets
    /// less than a core, and it is no less stuck.
    package let busyFraction: Double
    /// A ping this late counts as busy (a quarter of the stall threshold by default).
    package let lateLatency: Duration

    private var streakStart: MonotonicInstant?
    private var samples: [StackSample] = []
    private var reported = false

    /// What one observation means.
    package enum Verdict: Equatable, Sendable {
        /// Not busy: any streak is over.
        case quiet
        /// Busy, not (yet, or again) reportable.
        case busy
        /// Busy for `busyFor` with `path` (root first) in more than half of `sampleCount` samples:
        /// report it, once per streak.
        case report(busyFor: Duration, path: StackSignature, sampleCount: Int)
    }

    /// A detector; `window` must be positive.
    package init(window: Duration, busyFraction: Double = 0.9, lateLatency: Duration) {
        self.window = window
        self.busyFraction = busyFraction
        self.lateLatency = lateLatency
    }

    /// Whether the loop is in a busy streak now (then a sample is worth taking).
    package var inStreak: Bool { streakStart != nil }

    /// One round: the time the loop thread wanted a core over the round (CPU time plus run-queue
    /// wait), the round's wall time, the latency of a ping answered in it (if any), and a stack
    /// sample taken in it (if any).
    package mutating func observe(now: MonotonicInstant, demand: Duration, wall: Duration, pingLatency: Duration?,
                                 sample: StackSample?) -> Verdict {
        let wantsCore = wall > .zero && demand.secondsDouble / wall.secondsDouble >= busyFraction
        let late = pingLatency.map { $0 >= lateLatency } ?? false
        guard wantsCore || late else {
            streakStart = nil
            samples.removeAll()
            reported = false
            return .quiet
        }
        let start = streakStart ?? (now - wall)
        streakStart = start
        if let sample, !sample.frames.isEmpty {
            samples.append(sample)
            if samples.count > 64 { samples.removeFirst(samples.count - 64) }
        }
        guard !reported, now - start >= window, samples.count >= 3 else { return .busy }
        let tree = CallTree(samples: samples)
        let path = StackSignature(dominantPathOf: tree)
        // "The same stack recurring": most samples share nearly their whole stack, not only the
        // loop's own frames (a server saturated by varied requests shares just those).
        let depths = samples.map(\.frames.count).sorted()
        let median = depths[depths.count / 2]
        guard path.depth >= 2, path.depth * 4 >= median * 3 else { return .busy }
        reported = true
        return .report(busyFor: now - start, path: path, sampleCount: samples.count)
    }
}
