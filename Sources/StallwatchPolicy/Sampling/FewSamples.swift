import StallwatchReport

/// Why a stall's final report holds fewer samples than a call tree needs, in words a reader can act
/// on. A report with one or two samples blames whatever they caught; saying why tells the reader
/// how far to trust it.
package enum FewSamples {
    /// Fewer samples than this and the report says why.
    package static let enough = 3

    /// The sentence for a stall of `duration` sampled every `interval` of its thread's CPU time,
    /// whose final report has `kept` samples taken while it lasted and left `dropped` out (taken
    /// after it ended); `nil` when it has enough.
    package static func reason(kept: Int, dropped: Int, cause: StallCauseKind?, duration: Duration,
                               interval: Duration?) -> String? {
        guard kept < enough else { return nil }
        var parts: [String] = []
        switch cause {
        case .cpuBound?:
            // The CPU clock ran (so the timer expired), yet few samples landed: the thread was in
            // the kernel, where a signal waits until the call returns.
            parts.append("the thread spent the stall in a few long system calls (e.g. one `read` of a large file), "
                         + "and a signal is delivered only when a call returns")
        case .diskIO?, .networkIO?, .lockWait?, .sleeping?, .blockedInSyscall?:
            parts.append("the thread was blocked in the kernel: its timer runs on its CPU time, which a blocked thread "
                         + "does not use, and a blocked thread is read from /proc without a signal once per sampling interval")
        case .starved?, .tooManyThreads?:
            parts.append("the thread waited for a CPU: its timer runs on its CPU time, which it did not get")
        default:
            if let interval, duration < interval * enough {
                parts.append("the stall lasted less than \(enough) sampling intervals")
            } else {
                parts.append("few samples could be taken while it lasted")
            }
        }
        if dropped > 0 {
            parts.append("\(dropped) sample\(dropped == 1 ? "" : "s") taken after it ended left out")
        }
        return "\(kept) sample\(kept == 1 ? "" : "s"): " + parts.joined(separator: "; ")
    }
}
