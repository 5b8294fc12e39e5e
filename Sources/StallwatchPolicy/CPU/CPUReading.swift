import StallwatchReport
/// One thread's CPU time over a reading's period.
package struct ThreadCPUTime: Sendable, Equatable {
    /// Kernel thread id.
    package var threadID: Int32
    /// Thread name (`comm`).
    package var name: String
    /// CPU time used during the period.
    package var cpuTimeDelta: Duration

    /// Creates a per-thread reading.
    package init(threadID: Int32, name: String, cpuTimeDelta: Duration) {
        self.threadID = threadID
        self.name = name
        self.cpuTimeDelta = cpuTimeDelta
    }
}

/// One periodic CPU reading of the process, taken by the watchdog.
package struct CPUReading: Sendable, Equatable {
    /// Process CPU time used during the period (all threads).
    package var processCPUTimeDelta: Duration
    /// Wall time of the period; readings with a period ≤ 0 or above the configured maximum are
    /// ignored.
    package var wallDelta: Duration
    /// CPUs available to the process.
    package var cores: Int
    /// Per-thread CPU time during the period (may be empty when only process figures are needed).
    package var threads: [ThreadCPUTime]

    /// Creates a reading.
    package init(processCPUTimeDelta: Duration, wallDelta: Duration, cores: Int, threads: [ThreadCPUTime] = []) {
        self.processCPUTimeDelta = processCPUTimeDelta
        self.wallDelta = wallDelta
        self.cores = cores
        self.threads = threads
    }
}

/// A thread named in a CPU event, with its usage as a fraction of one core.
package struct ThreadCPUShare: Sendable, Equatable, Codable {
    /// Kernel thread id.
    package var threadID: Int32
    /// Thread name.
    package var name: String
    /// CPU time ÷ wall time (1.0 = one full core).
    package var fraction: Double

    /// Creates a share.
    package init(threadID: Int32, name: String, fraction: Double) {
        self.threadID = threadID
        self.name = name
        self.fraction = fraction
    }
}
