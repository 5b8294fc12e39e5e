import StallwatchPolicy

/// The watchdog's state for one monitored loop. Lives on the watchdog thread only.
final class LoopMonitor {
    let source: LoopSource
    var detector: StallDetector
    var filter: StallFilter
    var ring: SamplingRing?
    var samples: [CapturedStack] = []
    var baseline: ThreadBaseline?
    var stallRound = 0
    var reportedThisStall = false
    var stallSince: MonotonicInstant?
    var stallThread: ThreadID?
    /// The signatures this stall was reported with: the same stall again is not a new report.
    var reportedSignatures: [StackSignature] = []
    var followUps = 0
    /// The stall's first report, rewritten with the final duration when the stall ends.
    var firstReport: StallReport?
    /// Every sample of the current stall (the newest ``maxStallSamples``), for the final report.
    var stallSamples: [CapturedStack] = []
    static let maxStallSamples = 600
    /// The thread a sampling ring could not be started for (logged once).
    var unsampledThread: ThreadID?
    /// For ping-probed loops: busy without stalling (nil when `busyLoopWindow` is zero).
    var busyLoop: BusyLoopDetector?
    /// The loop thread's demand for a core (CPU time plus run-queue wait) at the last round, for
    /// the busy-loop detector.
    var lastThreadDemand: (thread: ThreadID, demand: Duration, at: MonotonicInstant)?

    init(source: LoopSource, configuration: WatchdogConfiguration) {
        self.source = source
        self.detector = StallDetector(configuration: configuration)
        self.filter = StallFilter(configuration: configuration)
        if case .ping = source, configuration.busyLoopWindow > .zero {
            busyLoop = BusyLoopDetector(window: configuration.busyLoopWindow, lateLatency: configuration.threshold / 4)
        }
    }

    /// Which samples belong to the loop's work (all, unless set: a pool thread's job).
    var accepts: ((CapturedStack) -> Bool)?

    /// Keeps only the newest samples: the ring of period / interval samples.
    func append(_ new: [CapturedStack], capacity: Int) {
        let new = accepts.map { new.filter($0) } ?? new
        samples.append(contentsOf: new)
        if samples.count > capacity { samples.removeFirst(samples.count - capacity) }
        stallSamples.append(contentsOf: new)
        if stallSamples.count > Self.maxStallSamples { stallSamples.removeFirst(stallSamples.count - Self.maxStallSamples) }
    }

    func stopSampling() {
        ring?.stop()
        ring = nil
    }

    func forgetStall() {
        stopSampling()
        samples.removeAll(keepingCapacity: true)
        baseline = nil
        stallRound = 0
        reportedThisStall = false
        stallSince = nil
        stallThread = nil
        reportedSignatures.removeAll()
        followUps = 0
        firstReport = nil
        stallSamples.removeAll()
    }
}
