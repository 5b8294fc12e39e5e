/// matrix's thread cut-off: with too many threads, walking every stack costs too much and the
/// thread count itself is the likely story.
public struct ThreadCountPolicy: Sendable, Equatable {
    /// What to do at a stall.
    public enum Decision: Equatable, Sendable {
        /// Capture every thread's stack for the report.
        case walkAllThreads
        /// Do not walk other threads; classify the stall as ``StallCauseKind/tooManyThreads``.
        case tooManyThreads(count: Int)
    }

    /// More threads than this is too many.
    public let cutoff: Int

    /// Creates the policy with a cut-off (64 by default in ``WatchdogConfiguration``).
    public init(cutoff: Int) {
        self.cutoff = cutoff
    }

    /// The decision for `threadCount` threads at a stall (strictly more than the cut-off trips).
    public func evaluate(threadCount: Int) -> Decision {
        threadCount > cutoff ? .tooManyThreads(count: threadCount) : .walkAllThreads
    }
}
