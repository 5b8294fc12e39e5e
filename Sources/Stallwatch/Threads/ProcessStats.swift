import CSampler

/// Process-wide facts reported with every stall.
package struct ProcessStats: Hashable, Sendable, Codable {
    /// CPU time consumed by the process so far.
    package let cpuTime: Duration
    /// Resident set size in bytes.
    package let residentBytes: UInt64
    /// Virtual memory size in bytes.
    package let virtualBytes: UInt64
    /// Number of threads.
    package let threadCount: Int

    /// Creates a record from its parts.
    package init(cpuTime: Duration, residentBytes: UInt64, virtualBytes: UInt64, threadCount: Int) {
        self.cpuTime = cpuTime
        self.residentBytes = residentBytes
        self.virtualBytes = virtualBytes
        self.threadCount = threadCount
    }

    /// Reads the current figures (CPU clock, `/proc/self/statm`, `/proc/self/task`).
    /// - Throws: ``ThreadError`` when one of the sources cannot be read.
    package static func current() throws(ThreadError) -> ProcessStats {
        let cpu = try ProcessCPUClock().elapsed()
        var rss: UInt64 = 0
        var vm: UInt64 = 0
        let rc = sw_process_memory(&rss, &vm)
        guard rc == 0 else { throw ThreadError(code: rc, operation: "reading /proc/self/statm") }
        return ProcessStats(cpuTime: cpu, residentBytes: rss, virtualBytes: vm, threadCount: try ThreadList.count())
    }
}
