import StallwatchReport
/// matrix's thread cut-off, kept for what it is good for on a server: with many threads, walking
/// every other thread's stack for the report costs too much. It never decides the stall's cause.
package struct ThreadCountPolicy: Sendable, Equatable {
    /// What to do at a stall.
    package enum Decision: Equatable, Sendable {
        /// Capture every thread's stack for the report.
        case walkAllThreads
        /// Do not walk other threads: there are `count`, more than the cut-off.
        case skipOtherThreads(count: Int)
    }

    /// More threads than this is too many.
    package let cutoff: Int

    /// Creates the policy with a cut-off (64 by default in ``WatchdogConfiguration``).
    package init(cutoff: Int) {
        self.cutoff = cutoff
    }

    /// The decision for `threadCount` threads at a stall (strictly more than the cut-off trips).
    package func evaluate(threadCount: Int) -> Decision {
        threadCount > cutoff ? .skipOtherThreads(count: threadCount) : .walkAllThreads
    }
}
