import CSampler

/// The CPU time one thread of this process has consumed, read from the kernel's per-thread CPU
/// clock (one `clock_gettime`, nanosecond resolution, no `/proc` parsing).
///
/// A stalled thread whose clock advances with wall time is CPU-bound; one whose clock stands still
/// is waiting.
package struct ThreadCPUClock: Hashable, Sendable {
    /// The thread whose CPU time this clock reads.
    package let thread: ThreadID

    /// A clock for `thread`. Creating it does not check that the thread exists.
    package init(_ thread: ThreadID) {
        self.thread = thread
    }

    /// The calling thread's clock.
    package static var current: ThreadCPUClock {
        ThreadCPUClock(.current)
    }

    /// The whole process's CPU clock (all threads, including ones that have exited).
    package static var process: ProcessCPUClock {
        ProcessCPUClock()
    }

    /// CPU time the thread has consumed since it started.
    /// - Throws: ``ThreadError/threadGone(_:)`` once the thread has exited.
    package func elapsed() throws(ThreadError) -> Duration {
        var ns: UInt64 = 0
        let rc = sw_thread_cpu_time_ns(thread.rawValue, &ns)
        guard rc == 0 else { throw ThreadError(code: rc, operation: "reading the CPU clock of thread \(thread)", thread: thread) }
        return .nanoseconds(Int64(clamping: ns))
    }
}
