import CSampler

/// The CPU time the whole process has consumed (`CLOCK_PROCESS_CPUTIME_ID`).
package struct ProcessCPUClock: Hashable, Sendable {
    /// The process clock; all instances read the same clock.
    package init() {}

    /// CPU time consumed by all threads of the process so far, including threads that have exited.
    /// - Throws: ``ThreadError/system(operation:errno:)`` if the clock cannot be read.
    package func elapsed() throws(ThreadError) -> Duration {
        var ns: UInt64 = 0
        let rc = sw_process_cpu_time_ns(&ns)
        guard rc == 0 else { throw ThreadError(code: rc, operation: "reading the process CPU clock") }
        return .nanoseconds(Int64(clamping: ns))
    }
}
