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
    /// Ticks the loop reported itself (``recordTick(startNanoseconds:endNanoseconds:)``), if it does.
    let ticks = LoopTicks()
    private let reportsTicks = Atomic<Bool>(false)
    // A loop that reports its ticks is not pinged but looked at (``PingedLoopWatcher``): its
    // thread, the newest tick end, the longest tick since the watchdog last took it, and whether
    // the outstanding "ping" is a look that saw the loop busy (answered by the loop's next tick
    // end, nothing is posted).
    private let loopThread = Atomic<Int32>(0)
    private let lastTickEnd = Atomic<UInt64>(0)
    private let longestTick = Atomic<UInt64>(0)
    private let outstandingIsLook = Atomic<Bool>(false)
    /// Whether this probe pings the cooperative pool (``cooperativePool(name:priority:)``): then
    /// the pool's workers are looked at instead while one of them waits for work.
    let watchesCooperativePool: Bool

    /// A probe that posts its jobs with `post`. The closure must only enqueue the job, never run it
    /// inline on the caller (the watchdog's own thread).
    public init(name: String, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.name = name
        self.post = post
        self.watchesCooperativePool = false
    }

    init(name: String, watchesCooperativePool: Bool, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.name = name
        self.post = post
        self.watchesCooperativePool = watchesCooperativePool
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
            if posted != 0 {
                let ran = MonotonicClock.nowNanoseconds()
                lastLateness.store(ran &- posted, ordering: .relaxed)
                answeredAt.store(ran, ordering: .relaxed)
                answeredPosted.store(posted, ordering: .releasing)
            }
            answered.add(1, ordering: .releasing)
            postedAt.store(0, ordering: .releasing)
        }
        return true
    }

    /// Records one tick the loop finished, with its exact start and end on the monotonic clock:
    /// a stall on a loop that reports its ticks gets the stalled tick's start and end once it is
    /// over, not the ping's (see ``LoopTicks``). Called on the loop's thread after each tick.
    package func recordTick(startNanoseconds: UInt64, endNanoseconds: UInt64) {
        if !reportsTicks.load(ordering: .relaxed) {
            let tid = sw_current_tid()
            loopThread.store(tid, ordering: .relaxed)
            if threadID.load(ordering: .relaxed) == 0 { threadID.store(tid, ordering: .relaxed) }
            reportsTicks.store(true, ordering: .releasing)
        }
        let posted = postedAt.load(ordering: .acquiring)
        ticks.record(start: startNanoseconds, end: endNanoseconds, posted: posted)
        if endNanoseconds >= startNanoseconds, endNanoseconds - startNanoseconds > longestTick.load(ordering: .relaxed) {
            longestTick.store(endNanoseconds - startNanoseconds, ordering: .relaxed)
        }
        lastTickEnd.store(endNanoseconds, ordering: .sequentiallyConsistent)
        if posted != 0, endNanoseconds >= posted, outstandingIsLook.load(ordering: .acquiring) {
            answerLook(posted: posted, ran: endNanoseconds)
        }
    }

    // MARK: - what the watchdog's look reads and posts (``PingedLoopWatcher``, its thread only)

    /// Ends the busy period a look saw (posted at `posted`) at `ran`, the end of the loop's next
    /// tick: exactly once, whoever gets there first (the loop after its tick, or the watchdog).
    func answerLook(posted: UInt64, ran: UInt64) {
        guard postedAt.compareExchange(expected: posted, desired: 0, ordering: .sequentiallyConsistent).exchanged else { return }
        outstandingIsLook.store(false, ordering: .relaxed)
        lastLateness.store(ran &- posted, ordering: .relaxed)
        answeredAt.store(ran, ordering: .relaxed)
        answeredPosted.store(posted, ordering: .releasing)
        answered.add(1, ordering: .releasing)
    }

    /// A look found the loop busy between ticks at `now`: an outstanding "ping" that the loop's next
    /// tick end answers, nothing posted.
    func beginLook(at now: UInt64) {
        generation.add(1, ordering: .relaxed)
        outstandingIsLook.store(true, ordering: .sequentiallyConsistent)
        postedAt.store(now, ordering: .sequentiallyConsistent)
        // The loop may have ended a tick between the two reads: then it was not busy after all.
        let after = lastTickEnd.load(ordering: .sequentiallyConsistent)
        if after >= now { answerLook(posted: now, ran: after) }
    }

    /// The outstanding ping's or look's post time (monotonic ns), 0 when none is outstanding.
    var postedNanoseconds: UInt64 { postedAt.load(ordering: .acquiring) }

    /// Whether the outstanding "ping" is a look that saw the loop busy.
    var outstandingLook: Bool { outstandingIsLook.load(ordering: .acquiring) }

    /// The end of the newest tick the loop reported (monotonic ns), 0 before the first.
    var lastTickEndNanoseconds: UInt64 { lastTickEnd.load(ordering: .sequentiallyConsistent) }

    /// The loop's thread, once it reported a tick.
    var tickingThread: ThreadID? {
        let tid = loopThread.load(ordering: .relaxed)
        return tid != 0 && reportsTicks.load(ordering: .acquiring) ? ThreadID(rawValue: tid) : nil
    }

    /// How many pings (and looks) were answered so far.
    var answeredCount: UInt64 { answered.load(ordering: .acquiring) }

    /// The longest tick since the last call (0: none, or the loop does not report its ticks).
    func takeLongestTick() -> UInt64 {
        reportsTicks.load(ordering: .relaxed) ? longestTick.exchange(0, ordering: .relaxed) : 0
    }

    /// When the last ping ran or the last look was answered (monotonic ns), 0 before the first.
    var answeredAtNanoseconds: UInt64 { answeredAt.load(ordering: .relaxed) }

    /// The pool worker a look found busy: the thread a report of this loop samples until a ping runs.
    func noteBusyWorker(_ worker: ThreadID) { threadID.store(worker.rawValue, ordering: .relaxed) }

    /// The exact bounds of the busy period the ping posted at `posted` measured, if the loop's
    /// ticks tell them; `answered` is when that ping ran.
    func tickBounds(posted: MonotonicInstant, answered: MonotonicInstant) -> (start: MonotonicInstant?, end: MonotonicInstant)? {
        guard reportsTicks.load(ordering: .relaxed) else { return nil }
        return ticks.bounds(posted: posted.nanoseconds, answered: answered.nanoseconds)
    }

    /// Whether the loop reports its ticks (``recordTick(startNanoseconds:endNanoseconds:)``).
    var isReportingTicks: Bool { reportsTicks.load(ordering: .relaxed) }

    /// The newest long tick the loop reported, for a stall that began and ended between two looks:
    /// when a resting loop's wake goes unseen (see ``LoopRest``: where AIO poll is unavailable),
    /// a look dates the busy period from itself, too late. The tick tells its exact bounds.
    var lastEndedPeriod: (since: MonotonicInstant, end: MonotonicInstant)? {
        guard reportsTicks.load(ordering: .relaxed) else { return nil }
        return ticks.newestLong
    }

    /// Whether the loop reports ticks but has not yet reported the one that ran a ping answered at
    /// `answered` (then the stall's exact bounds are a moment away).
    func awaitsTick(after answered: MonotonicInstant) -> Bool {
        reportsTicks.load(ordering: .relaxed) && !ticks.reported(through: answered.nanoseconds)
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
