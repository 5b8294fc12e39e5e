import StallwatchPolicy
import StallwatchReport

/// The watchdog's state for one monitored loop. Lives on the watchdog thread only.
///
/// The stall itself (its start, rounds, deadlines and report) belongs to ``detector``; this keeps
/// only what the watchdog gathered for it: samples, the thread baseline and evidence.
final class LoopMonitor {
    let source: LoopSource
    var detector: StallDetector
    var filter: StallFilter
    var ring: SamplingRing?
    /// When ``ring`` was set to take its first sample after a millisecond of the thread's CPU time
    /// (``SamplingRing/sampleFirst(after:)``), and the thread's CPU time then; nil when it was not,
    /// or that ring is gone.
    var firstSampleArmed: (at: MonotonicInstant, cpu: Duration)?
    /// Samples of the current busy period from the moment it was suspected (the newest
    /// ``maxSamples``): the report's call tree, and its newest ring's worth for identity.
    private(set) var samples: [CapturedStack] = []
    static let maxSamples = 600
    var baseline: ThreadBaseline?
    /// The loop thread's `/proc` files, kept open from the moment its busy period is suspected until
    /// it is forgotten: evidence is read every round for every suspected or stalled loop, while a
    /// short busy period never needs them.
    private(set) var taskFiles: TaskFiles?

    /// ``taskFiles`` for `thread`, opened (again, when the loop moved to another thread) if needed.
    func files(of thread: ThreadID) -> TaskFiles {
        if let taskFiles, taskFiles.tid == thread { return taskFiles }
        let opened = TaskFiles(thread)
        taskFiles = opened
        return opened
    }
    /// The newest evidence about the thread that was checked to be taken while the busy period
    /// still ran: a cause is never read from a thread that already moved on.
    var evidence: (evidence: ThreadEvidence, info: StalledThreadRead?)? {
        didSet { if let e = evidence?.evidence { observedStates.note(e) } }
    }
    /// The round ``evidence`` was last gathered in (see ``DetectionSchedule/evidencePeriod``).
    var evidenceAt: MonotonicInstant?
    /// The round the thread was last asked whether it is blocked, for a blocked stack (at most one
    /// a sampling interval, see `WatchdogEngine.collect`).
    var blockedReadAt: MonotonicInstant?
    /// Every state ``evidence`` saw during the busy period, for a cause that is not one snapshot's.
    private(set) var observedStates = ObservedStates()
    /// The stack signature the episode's report was last made with: a changed one updates it.
    var reportedSignature: StackSignature?
    /// Why the episode's report was last held back, if it was (one `.filtered` event per reason).
    var filtered: FilterReason?
    /// Why the episode's first report had no stack, if it had none: its final report says it again
    /// when no sample came later.
    var noStackReason: String?
    /// The thread a sampling ring could not be started for (logged once).
    var unsampledThread: ThreadID?
    /// For ping-probed loops: busy without stalling (nil when `busyLoopWindow` is zero).
    var busyLoop: BusyLoopDetector?
    /// The largest ping latency since the busy-loop detector last judged the loop.
    var busyLoopLag: Duration?
    /// The id and start of the last stall report this loop finished: a pool report made a moment
    /// before its jobs' own reports links them when it is made final.
    var lastFinishedReport: (id: String, start: Int64)?
    /// The busy-loop report of the streak in progress, made final when the streak ends.
    var openBusyLoopReport: (report: StallReport, start: MonotonicInstant)?
    /// Feedback reports of the busy period in progress (with its start and number), made final
    /// when it ends.
    var openFeedbackReports: [(report: StallReport, since: MonotonicInstant, period: UInt64)] = []
    /// The loop thread's demand for a core (CPU time plus run-queue wait) at the last round, for
    /// the busy-loop detector.
    var lastThreadDemand: (thread: ThreadID, demand: Duration, at: MonotonicInstant)?
    /// The loop thread's `/proc` files its demand is read from, open across busy periods (an open
    /// and a close per read were most of what judging a free loop cost).
    var demandFiles: TaskFiles?

    /// For a ping-probed loop: the watchdog's side of its probe (answers taken, looks, rest).
    let pinged: PingedLoopWatcher?

    init(source: LoopSource, configuration: WatchdogConfiguration, schedule: DetectionSchedule) {
        self.source = source
        self.detector = StallDetector(configuration: configuration)
        self.filter = StallFilter(configuration: configuration)
        if case .ping(let probe) = source {
            pinged = PingedLoopWatcher(probe: probe)
            if configuration.busyLoopWindow > .zero {
                busyLoop = BusyLoopDetector(window: configuration.busyLoopWindow, lateLatency: schedule.busyLoopLatency)
            }
        } else {
            pinged = nil
        }
    }

    /// The last busy period the loop was seen to end, for a stall that began and ended between two
    /// rounds: a heartbeat's, or the newest long tick of a loop that reports its ticks. Other
    /// pinged loops know a period only by the ping that waited in it: `nil`.
    var lastEndedPeriod: (since: MonotonicInstant, end: MonotonicInstant)? {
        switch source {
        case .heartbeat(let p): p.lastEndedPeriod
        case .ping: pinged?.ticks?.lastEndedPeriod
        }
    }

    /// Whether the loop reports its own ticks (a NIO loop with a tick timer).
    var reportsTicks: Bool { pinged?.ticks?.isReportingTicks ?? false }

    /// The loop's lag since the last call: a ping's latency, or the longest busy period that ended.
    func takeLag() -> Duration? {
        switch source {
        case .heartbeat(let p): p.takeLongestBusyPeriod()
        case .ping: pinged?.takeAnsweredLatency()
        }
    }

    /// Which samples belong to the loop's work (all, unless set: a pool thread's job).
    var accepts: ((CapturedStack) -> Bool)?
    /// Whether the probe's busy record is the loop's own (its `busy()` and `idle()`), so that a
    /// period that ended unseen can still be judged a stall. A pool thread's is the pool watcher's
    /// estimate: the watcher reports the jobs it sees run long itself.
    var ownsBusyRecord = true

    /// Whether a stall is in progress.
    var inStall: Bool { detector.isInStall }

    /// The round that last stepped this loop: a round steps the loops awaiting detection first and
    /// the others after, and a loop it reported in the first pass is not awaiting any more.
    var steppedInRound: MonotonicInstant?

    /// Samples appended over the monitor's life: unchanged since ``signatureAt``, the stall's
    /// identity cannot have changed either.
    private(set) var samplesAdded = 0
    /// ``samplesAdded`` when the stall's signature was last computed.
    var signatureAt: Int?

    func append(_ new: [CapturedStack]) {
        for stack in new { append(stack) }
    }

    /// Keeps one new sample, if the loop's work accepts it; a sample pushed out or refused hands
    /// its frame storage back for the next (see ``takeFrameStorage()``).
    func append(_ stack: CapturedStack) {
        var stack = stack
        if let accepts, !accepts(stack) {
            recycleFrames(of: &stack)
            return
        }
        samplesAdded += 1
        if samples.count >= Self.maxSamples {
            recycleFrames(of: &samples[0])
            samples.removeFirst()
        }
        samples.append(stack)
    }

    /// Frame storage of samples no longer kept, for new ones: once a loop's stalls have been
    /// sampled, copying a drained sample allocates nothing.
    private var spareFrames: [[UInt]] = []

    /// Storage for one new sample's frames: a forgotten sample's, or a new empty array.
    func takeFrameStorage() -> [UInt] {
        spareFrames.popLast() ?? []
    }

    private func recycleFrames(of stack: inout CapturedStack) {
        guard spareFrames.count < Self.maxSamples else { return }
        if spareFrames.capacity == 0 { spareFrames.reserveCapacity(Self.maxSamples) }
        // Swapped out, so that the spare array is the storage's only owner.
        var frames: [UInt] = []
        swap(&frames, &stack.frames)
        spareFrames.append(frames)
    }

    /// The newest `capacity` samples: matrix's ring of one period, which identifies the stall.
    func recentSamples(_ capacity: Int) -> ArraySlice<CapturedStack> {
        samples.suffix(max(capacity, 1))
    }

    func stopSampling() {
        ring?.stop()
        ring = nil
        firstSampleArmed = nil
    }

    /// Forgets the busy period's samples and evidence (the detector forgets the stall itself).
    func forgetBusyPeriod(keepRing: Bool) {
        if !keepRing { stopSampling() }
        for i in samples.indices { recycleFrames(of: &samples[i]) }
        samples.removeAll(keepingCapacity: true)
        baseline = nil
        taskFiles = nil
        evidence = nil
        evidenceAt = nil
        blockedReadAt = nil
        observedStates = ObservedStates()
        reportedSignature = nil
        signatureAt = nil
        filtered = nil
        noStackReason = nil
    }
}
