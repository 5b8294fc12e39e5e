/// What a report is about.
///
/// A struct with static members rather than an enum, so that a release can add a kind without
/// breaking a consumer's `switch` (keep a `default:` branch). Coded as its ``rawValue`` string.
public struct ReportKind: RawRepresentable, Hashable, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// The stable name, as in the report's `kind` field (`stall`).
    public let rawValue: String
    /// A kind from its name; names unknown to this version are kept as they are.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A loop stayed busy beyond the threshold.
    public static let stall = ReportKind(rawValue: "stall")
    /// Process CPU went above the high fraction of all cores.
    public static let cpuHigh = ReportKind(rawValue: "cpuHigh")
    /// Process CPU stayed high for the sustained duration.
    public static let cpuSustained = ReportKind(rawValue: "cpuSustained")
    /// A key came round more often than its threshold within one busy period of a loop: a loop
    /// that never settles (see `feedback`).
    public static let feedbackLoop = ReportKind(rawValue: "feedbackLoop")
    /// A ping-probed loop stayed busy for `busyLoopWindow` without stalling, the same stack
    /// recurring (a task that re-enqueues itself on its event loop).
    public static let busyLoop = ReportKind(rawValue: "busyLoop")

    /// Every kind this version knows.
    public static let allCases: [ReportKind] = [.stall, .cpuHigh, .cpuSustained, .feedbackLoop, .busyLoop]

    public var description: String { rawValue }
}

/// What a `feedbackLoop` report counted.
public struct FeedbackFacts: Equatable, Sendable, Codable {
    /// The key, as the application named it.
    public var key: String
    /// Occurrences within the busy period when the report was made.
    public var count: Int
    /// The count that triggers a report.
    public var threshold: Int

    /// Facts of one crossing.
    public init(key: String, count: Int, threshold: Int) {
        self.key = key
        self.count = count
        self.threshold = threshold
    }
}

/// How a stalled loop was sampled.
public struct SamplingFacts: Equatable, Sendable, Codable {
    /// Why the interval is what it is.
    /// A struct with static members, not an enum, so that a reason can be added without breaking
    /// a consumer's `switch`.
    public struct Reason: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The stable name, as stored in reports.
        public let rawValue: String
        /// A reason from its name; names unknown to this version are kept as they are.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The configured `sampleInterval`.
        public static let configured = Reason(rawValue: "configured")
        /// Stretched so that the sampler stays inside its CPU budget (many loops stalled at once).
        public static let budget = Reason(rawValue: "budget")

        public var description: String { rawValue }
    }

    /// The interval between two samples of the loop's thread (of its CPU time), nanoseconds.
    public var intervalNanoseconds: Int64
    /// Why.
    public var reason: Reason
    /// What took the samples: `timer-signal` (a CPU-clock timer and the sampling signal) or
    /// `perf-event` (the kernel, no signal); absent in reports written before it was recorded.
    public var driver: String?
    /// Why the perf-event driver was configured and not used (the kernel's refusal), if it was not.
    public var driverFallback: String?
    /// In a final report with fewer than 3 samples: why so few (e.g. the thread spent the stall in
    /// long system calls, where a signal waits), and how many taken after the stall ended were
    /// left out. Absent otherwise.
    public var fewSamplesReason: String?

    /// Facts of a loop's sampling.
    public init(interval: Duration, reason: Reason) {
        self.intervalNanoseconds = interval.clampedNanoseconds
        self.reason = reason
    }
}

/// One report, as written to disk and handed to sinks. The JSON schema (camelCase keys, stable
/// within a ``schemaVersion``) is documented field by field in `docs/report-schema.md`.
///
/// Times: `startTimeUnixNanoseconds` is wall-clock time (Unix epoch, nanoseconds, UTC) so it
/// can be matched against logs; durations are integer nanoseconds measured on the monotonic
/// clock.
public struct StallReport: Sendable, Equatable, Codable {
    /// The schema version this code writes: 2 (the call tree stored flat). Version 1 files (nested
    /// call tree) are still read.
    public static let currentSchemaVersion = 2

    /// Schema version of this report.
    public var schemaVersion: Int
    /// What the report is about.
    public var kind: ReportKind
    /// Unique id chosen by the writer (e.g. a UUID string); also part of the file name.
    public var id: String
    /// Why, with evidence in words; absent when not classified.
    public var cause: StallCause?
    /// The monitored loop's name (absent for process-wide CPU reports).
    public var loopName: String?
    /// The stalled thread (absent for process-wide CPU reports).
    public var thread: ThreadIdentity?
    /// When the stall (or CPU episode) started: Unix epoch nanoseconds, wall clock.
    public var startTimeUnixNanoseconds: Int64
    /// How long it lasted, nanoseconds (so far, unless ``durationIsFinal``).
    public var durationNanoseconds: Int64
    /// `true` when written after the stall ended; `false` when written while still stalled.
    public var durationIsFinal: Bool
    /// The stall threshold in force, nanoseconds.
    public var thresholdNanoseconds: Int64
    /// The version of this report: 0 when first made, n after its n-th rewrite. A stall has one
    /// report (one id), rewritten while it lasts and made final when it ends.
    public var sequenceInStall: Int
    /// Stack samples the call tree was built from.
    public var sampleCount: Int
    /// The blamed stack, leaf first, each frame with its sample count.
    public var blamedStack: [ReportFrame]
    /// Samples whose walk ended before the thread's first frame: their outermost frames are
    /// missing, so the call tree's roots are not the thread's entry for them. ``stackEnds`` says why.
    public var truncatedSampleCount: Int
    /// Why the walks of the ``truncatedSampleCount`` samples ended early, counted by reason
    /// (`frameLimit`, `badLink`, `noUnwindInfo`, `unreadable`, `stackUnknown`, `timedOut`,
    /// `budget`); absent when every walk reached the thread's first frame.
    public var stackEnds: [String: Int]?
    /// Why the async callers of a resumed Swift async function are missing from the stacks: the
    /// concurrency runtime's layout could not be learnt in this process (the reason), or not yet.
    /// Absent when they are shown, and when no sampled stack ran an async function.
    public var asyncCallersMissing: String?
    /// The Swift task a stalled pool job ran (the one most of the samples ran); absent for a
    /// thread that ran no task, and where no signal handler sampled it (blocked threads, perf).
    public var task: ReportTask?
    /// The sampled call tree, flat: depth-first, each node after its parent (see
    /// ``ReportCallTreeNode``).
    public var callTree: [ReportCallTreeNode]
    /// Other threads' stacks; absent above the thread cut-off or when not captured.
    public var otherThreads: [ThreadStack]?
    /// Threads in the process at the stall.
    public var threadCount: Int
    /// Per-thread CPU usage, busiest first.
    public var threadCPU: [ThreadCPUUsage]
    /// Process CPU and memory.
    public var process: ProcessFacts?
    /// NUMA layout and the stalled thread's node; absent when libnuma reports nothing.
    public var numa: NUMAFacts?
    /// The configuration in force.
    public var configuration: WatchdogConfiguration
    /// What was filtered or suppressed since the previous report.
    public var counters: ReportCounters
    /// How late the watchdog's round that wrote this report ran (CPUs saturated, or a slow host),
    /// nanoseconds; time the process was stopped is not counted. 0 when on time.
    public var watchdogLatenessNanoseconds: Int64
    /// For a `feedbackLoop` report: the key and its count. Absent otherwise.
    public var feedback: FeedbackFacts?
    /// How the loop's thread was sampled (absent when it was not sampled by timer).
    public var sampling: SamplingFacts?
    /// The request the stalled code was serving (method, route, trace and span ids); absent when
    /// it served none registered with `StallAttribution`, and in reports written before it existed.
    public var request: ReportRequest?
    /// For a thread blocked on a lock: the lock, its holder and the holder's stack, or why there is
    /// no holder to name; absent for other stalls and in reports written before it was recorded.
    public var lockWait: LockWaitFacts?
    /// For a `cooperative-pool` report (the pool's ping stalled): the jobs holding the pool's
    /// workers at the stall, longest first, each with its stack and cause. Absent for other loops,
    /// and when no job was seen on the pool's workers.
    public var poolJobs: [PoolJobStack]?

    /// Creates a report; `schemaVersion` is always ``currentSchemaVersion``.
    public init(
        kind: ReportKind,
        id: String,
        cause: StallCause? = nil,
        loopName: String? = nil,
        thread: ThreadIdentity? = nil,
        startTimeUnixNanoseconds: Int64,
        duration: Duration,
        durationIsFinal: Bool,
        sequenceInStall: Int = 0,
        sampleCount: Int = 0,
        blamedStack: [ReportFrame] = [],
        truncatedSampleCount: Int = 0,
        callTree: [ReportCallTreeNode] = [],
        otherThreads: [ThreadStack]? = nil,
        threadCount: Int,
        threadCPU: [ThreadCPUUsage] = [],
        process: ProcessFacts? = nil,
        numa: NUMAFacts? = nil,
        configuration: WatchdogConfiguration,
        counters: ReportCounters = ReportCounters(),
        watchdogLateness: Duration = .zero
    ) {
        self.schemaVersion = Self.currentSchemaVersion
        self.kind = kind
        self.id = id
        self.cause = cause
        self.loopName = loopName
        self.thread = thread
        self.startTimeUnixNanoseconds = startTimeUnixNanoseconds
        self.durationNanoseconds = duration.clampedNanoseconds
        self.durationIsFinal = durationIsFinal
        self.thresholdNanoseconds = configuration.threshold.clampedNanoseconds
        self.sequenceInStall = sequenceInStall
        self.sampleCount = sampleCount
        self.blamedStack = blamedStack
        self.truncatedSampleCount = truncatedSampleCount
        self.callTree = callTree
        self.otherThreads = otherThreads
        self.threadCount = threadCount
        self.threadCPU = threadCPU
        self.process = process
        self.numa = numa
        self.configuration = configuration
        self.counters = counters
        self.watchdogLatenessNanoseconds = watchdogLateness.clampedNanoseconds
    }

    /// The duration as a `Duration`.
    public var duration: Duration { .nanoseconds(durationNanoseconds) }
}

extension StallReport {
    /// Decodes schema 2, and schema 1 (nested call tree, no truncation count or lateness). A
    /// newer schema is refused with a message naming both versions: guessing would mislead.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let version = try c.decode(Int.self, forKey: .schemaVersion)
        guard (1...Self.currentSchemaVersion).contains(version) else {
            throw DecodingError.dataCorruptedError(
                forKey: .schemaVersion, in: c,
                debugDescription: "schema version \(version) is not one this reader knows (1...\(Self.currentSchemaVersion))")
        }
        schemaVersion = version
        kind = try c.decode(ReportKind.self, forKey: .kind)
        id = try c.decode(String.self, forKey: .id)
        cause = try c.decodeIfPresent(StallCause.self, forKey: .cause)
        loopName = try c.decodeIfPresent(String.self, forKey: .loopName)
        thread = try c.decodeIfPresent(ThreadIdentity.self, forKey: .thread)
        startTimeUnixNanoseconds = try c.decode(Int64.self, forKey: .startTimeUnixNanoseconds)
        durationNanoseconds = try c.decode(Int64.self, forKey: .durationNanoseconds)
        durationIsFinal = try c.decode(Bool.self, forKey: .durationIsFinal)
        thresholdNanoseconds = try c.decode(Int64.self, forKey: .thresholdNanoseconds)
        sequenceInStall = try c.decode(Int.self, forKey: .sequenceInStall)
        sampleCount = try c.decode(Int.self, forKey: .sampleCount)
        blamedStack = try c.decode([ReportFrame].self, forKey: .blamedStack)
        truncatedSampleCount = try c.decodeIfPresent(Int.self, forKey: .truncatedSampleCount) ?? 0
        stackEnds = try c.decodeIfPresent([String: Int].self, forKey: .stackEnds)
        asyncCallersMissing = try c.decodeIfPresent(String.self, forKey: .asyncCallersMissing)
        task = try c.decodeIfPresent(ReportTask.self, forKey: .task)
        callTree = version == 1
            ? NestedCallTreeNode.flatten(try c.decode([NestedCallTreeNode].self, forKey: .callTree))
            : try c.decode([ReportCallTreeNode].self, forKey: .callTree)
        otherThreads = try c.decodeIfPresent([ThreadStack].self, forKey: .otherThreads)
        threadCount = try c.decode(Int.self, forKey: .threadCount)
        threadCPU = try c.decode([ThreadCPUUsage].self, forKey: .threadCPU)
        process = try c.decodeIfPresent(ProcessFacts.self, forKey: .process)
        numa = try c.decodeIfPresent(NUMAFacts.self, forKey: .numa)
        configuration = try c.decode(WatchdogConfiguration.self, forKey: .configuration)
        counters = try c.decode(ReportCounters.self, forKey: .counters)
        watchdogLatenessNanoseconds = try c.decodeIfPresent(Int64.self, forKey: .watchdogLatenessNanoseconds) ?? 0
        feedback = try c.decodeIfPresent(FeedbackFacts.self, forKey: .feedback)
        sampling = try c.decodeIfPresent(SamplingFacts.self, forKey: .sampling)
        request = try c.decodeIfPresent(ReportRequest.self, forKey: .request)
        lockWait = try c.decodeIfPresent(LockWaitFacts.self, forKey: .lockWait)
        poolJobs = try c.decodeIfPresent([PoolJobStack].self, forKey: .poolJobs)
    }
}
