/// One thread's CPU time over a reading's period.
public struct ThreadCPUTime: Sendable, Equatable {
    /// Kernel thread id.
    public var threadID: Int32
    /// Thread name (`comm`).
    public var name: String
    /// CPU time used during the period.
    public var cpuTimeDelta: Duration

    /// Creates a per-thread reading.
    public init(threadID: Int32, name: String, cpuTimeDelta: Duration) {
        self.threadID = threadID
        self.name = name
        self.cpuTimeDelta = cpuTimeDelta
    }
}

/// One periodic CPU reading of the process, taken by the watchdog.
public struct CPUReading: Sendable, Equatable {
    /// Process CPU time used during the period (all threads).
    public var processCPUTimeDelta: Duration
    /// Wall time of the period; readings with a period ≤ 0 or above the configured maximum are
    /// ignored.
    public var wallDelta: Duration
    /// CPUs available to the process.
    public var cores: Int
    /// Per-thread CPU time during the period (may be empty when only process figures are needed).
    public var threads: [ThreadCPUTime]

    /// Creates a reading.
    public init(processCPUTimeDelta: Duration, wallDelta: Duration, cores: Int, threads: [ThreadCPUTime] = []) {
        self.processCPUTimeDelta = processCPUTimeDelta
        self.wallDelta = wallDelta
        self.cores = cores
        self.threads = threads
    }
}

/// A thread named in a CPU event, with its usage as a fraction of one core.
public struct ThreadCPUShare: Sendable, Equatable, Codable {
    /// Kernel thread id.
    public var threadID: Int32
    /// Thread name.
    public var name: String
    /// CPU time ÷ wall time (1.0 = one full core).
    public var fraction: Double

    /// Creates a share.
    public init(threadID: Int32, name: String, fraction: Double) {
        self.threadID = threadID
        self.name = name
        self.fraction = fraction
    }
}
