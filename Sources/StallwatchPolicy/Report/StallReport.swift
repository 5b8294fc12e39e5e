/// What a report is about.
public enum ReportKind: String, Sendable, Equatable, Codable, CaseIterable {
    /// A loop stayed busy beyond the threshold.
    case stall
    /// Process CPU went above the high fraction of all cores.
    case cpuHigh
    /// Process CPU stayed high for the sustained duration.
    case cpuSustained
}

/// One report, as written to disk and handed to sinks. The JSON schema (camelCase keys, stable
/// within a ``schemaVersion``) is documented field by field in `docs/report-schema.md`.
///
/// Times: `startTimeUnixNanoseconds` is wall-clock time (Unix epoch, nanoseconds, UTC) so it
/// can be matched against logs; durations are integer nanoseconds measured on the monotonic
/// clock.
public struct StallReport: Sendable, Equatable, Codable {
    /// The schema version this code writes.
    public static let currentSchemaVersion = 1

    /// Schema version of this report (1).
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
    /// 0 for a stall's first report, n for the n-th follow-up annealing allowed.
    public var sequenceInStall: Int
    /// Stack samples the call tree was built from.
    public var sampleCount: Int
    /// The blamed stack, leaf first, each frame with its sample count.
    public var blamedStack: [ReportFrame]
    /// The sampled call tree, roots first, children heaviest first.
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
        callTree: [ReportCallTreeNode] = [],
        otherThreads: [ThreadStack]? = nil,
        threadCount: Int,
        threadCPU: [ThreadCPUUsage] = [],
        process: ProcessFacts? = nil,
        numa: NUMAFacts? = nil,
        configuration: WatchdogConfiguration,
        counters: ReportCounters = ReportCounters()
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
        self.callTree = callTree
        self.otherThreads = otherThreads
        self.threadCount = threadCount
        self.threadCPU = threadCPU
        self.process = process
        self.numa = numa
        self.configuration = configuration
        self.counters = counters
    }

    /// The duration as a `Duration`.
    public var duration: Duration { .nanoseconds(durationNanoseconds) }
}
