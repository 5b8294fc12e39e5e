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
    /// The thread a sampling ring could not be started for (logged once).
    var unsampledThread: ThreadID?

    init(source: LoopSource, configuration: WatchdogConfiguration) {
        self.source = source
        self.detector = StallDetector(configuration: configuration)
        self.filter = StallFilter(configuration: configuration)
    }

    /// Keeps only the newest samples: the ring of period / interval samples.
    func append(_ new: [CapturedStack], capacity: Int) {
        samples.append(contentsOf: new)
        if samples.count > capacity { samples.removeFirst(samples.count - capacity) }
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
    }
}
