import CSampler
import StallwatchPolicy
import StallwatchReport
import Synchronization

/// Watches a loop that cannot be instrumented: the watchdog posts a tiny job through `post` (onto any
/// executor, queue or event loop) and measures how late it runs. A job still waiting after the
/// threshold means the loop is stalled; the thread that ran the previous job is the one sampled.
///
/// ```swift
/// let probe = PingProbe(name: "nio-loop-0") { job in eventLoop.execute(job) }
/// watchdog.monitor(probe)
/// ```
public final class PingProbe: Sendable {
    /// The name reports use for this loop.
    public let name: String
    private let post: @Sendable (@escaping @Sendable () -> Void) -> Void
    // Monotonic nanoseconds when the outstanding ping was posted; 0 when none is outstanding.
    private let postedAt = Atomic<UInt64>(0)
    private let generation = Atomic<UInt64>(0)
    private let threadID = Atomic<Int32>(0)
    private let lastLateness = Atomic<UInt64>(0)
    private let answered = Atomic<UInt64>(0)
    // The last answered ping: when it was posted and when it ran (monotonic nanoseconds).
    private let answeredPosted = Atomic<UInt64>(0)
    private let answeredAt = Atomic<UInt64>(0)
    /// What the pings go to: the watchers watch the cooperative pool and a loop that reports its
    /// ticks by more than pings.
    let target: PingTarget

    /// A probe that posts its jobs with `post`. The closure must only enqueue the job, never run it
    /// inline on the caller (the watchdog's own thread).
    public init(name: String, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.name = name
        self.post = post
        self.target = .executor
    }

    /// A probe whose pings go to `target` through `post`.
    package init(name: String, target: PingTarget, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.name = name
        self.post = post
        self.target = target
    }

    /// How late the last ping ran after it was posted.
    public var lastLatency: Duration { .nanoseconds(Int64(clamping: lastLateness.load(ordering: .relaxed))) }

    /// Posts a ping unless one is still outstanding; returns whether it did.
    @discardableResult
    func pingIfIdle() -> Bool {
        guard postedAt.load(ordering: .acquiring) == 0 else { return false }
        let now = MonotonicClock.nowNanoseconds()
        let gen = generation.add(1, ordering: .relaxed).newValue
        postedAt.store(now, ordering: .releasing)
        post { [self] in
            // Only the ping of the current generation clears the stamp.
            guard generation.load(ordering: .relaxed) == gen else { return }
            threadID.store(sw_current_tid(), ordering: .relaxed)
            let posted = postedAt.load(ordering: .acquiring)
            if posted != 0 { noteRan(posted: posted, ran: MonotonicClock.nowNanoseconds()) }
            answered.add(1, ordering: .releasing)
            postedAt.store(0, ordering: .releasing)
        }
        return true
    }

    /// Records one tick the loop finished, with its exact start and end on the monotonic clock:
    /// a stall on a loop that reports its ticks gets the stalled tick's start and end once it is
    /// over, not the ping's (see ``LoopTickRecord``). Called on the loop's thread after each tick;
    /// a probe whose target is not a ticking loop has nowhere to keep them.
    package func recordTick(startNanoseconds: UInt64, endNanoseconds: UInt64) {
        target.tickRecord?.record(startNanoseconds: startNanoseconds, endNanoseconds: endNanoseconds, of: self)
    }

    // MARK: - an outstanding period no ping answers (a look's, see ``LoopTickRecord``)

    /// The loop is busy since `now` with nothing posted: the outstanding period a look saw. A ping
    /// of an earlier generation still queued no longer answers it.
    func markBusy(since now: UInt64) {
        generation.add(1, ordering: .relaxed)
        postedAt.store(now, ordering: .sequentiallyConsistent)
    }

    /// Claims the outstanding period posted at `posted` for an answer that is not its ping's:
    /// `false` when another answer got there first.
    func claimOutstanding(postedAt posted: UInt64) -> Bool {
        postedAt.compareExchange(expected: posted, desired: 0, ordering: .sequentiallyConsistent).exchanged
    }

    /// Answers the period ``claimOutstanding(postedAt:)`` claimed: the loop was busy from `posted`
    /// until `ran`.
    func answerClaimed(posted: UInt64, ran: UInt64) {
        noteRan(posted: posted, ran: ran)
        answered.add(1, ordering: .releasing)
    }

    private func noteRan(posted: UInt64, ran: UInt64) {
        lastLateness.store(ran &- posted, ordering: .relaxed)
        answeredAt.store(ran, ordering: .relaxed)
        answeredPosted.store(posted, ordering: .releasing)
    }

    // MARK: - what the watchdog reads

    /// The outstanding ping's or look's post time (monotonic ns), 0 when none is outstanding.
    var postedNanoseconds: UInt64 { postedAt.load(ordering: .acquiring) }

    /// How many pings (and looks) were answered so far.
    var answeredCount: UInt64 { answered.load(ordering: .acquiring) }

    /// When the last ping ran or the last look was answered (monotonic ns), 0 before the first.
    var answeredAtNanoseconds: UInt64 { answeredAt.load(ordering: .relaxed) }

    /// The pool worker a look found busy: the thread a report of this loop samples until a ping runs.
    func noteBusyWorker(_ worker: ThreadID) { threadID.store(worker.rawValue, ordering: .relaxed) }

    /// The loop's own thread, sampled until a ping runs and tells it, unless one did already.
    func noteThreadIfUnknown(_ thread: ThreadID) {
        if threadID.load(ordering: .relaxed) == 0 { threadID.store(thread.rawValue, ordering: .relaxed) }
    }

    /// When the ping posted at `since` ran, if it has: the loop was busy until then.
    func end(ofPeriodSince since: MonotonicInstant) -> MonotonicInstant? {
        let posted = answeredPosted.load(ordering: .acquiring)
        let ran = answeredAt.load(ordering: .relaxed)
        guard posted == since.nanoseconds, answeredPosted.load(ordering: .relaxed) == posted else { return nil }
        return MonotonicInstant(nanoseconds: ran)
    }

    /// When the outstanding ping was posted (the loop has been "busy" since), or `nil`.
    var busySince: MonotonicInstant? {
        let stamp = postedAt.load(ordering: .acquiring)
        return stamp == 0 ? nil : MonotonicInstant(nanoseconds: stamp)
    }

    /// The thread that ran the last ping.
    var thread: ThreadID? {
        let t = threadID.load(ordering: .relaxed)
        return t == 0 ? nil : ThreadID(rawValue: t)
    }
}
