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
    private let answersTaken = Atomic<UInt64>(0)
    // The last answered ping: when it was posted and when it ran (monotonic nanoseconds).
    private let answeredPosted = Atomic<UInt64>(0)
    private let answeredAt = Atomic<UInt64>(0)
    /// Ticks the loop reported itself (``recordTick(start:end:)``), if it does.
    let ticks = LoopTicks()
    private let reportsTicks = Atomic<Bool>(false)

    /// A probe that posts its jobs with `post`. The closure must only enqueue the job, never run it
    /// inline on the caller (the watchdog's own thread).
    public init(name: String, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void) {
        self.name = name
        self.post = post
    }

    /// How late the last ping ran after it was posted.
    public var lastLatency: Duration { .nanoseconds(Int64(clamping: lastLateness.load(ordering: .relaxed))) }

    /// Posts a ping unless one is still outstanding. Called by the watchdog each round.
    func pingIfIdle() {
        guard postedAt.load(ordering: .acquiring) == 0 else { return }
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
    }

    /// The latency of the ping answered since the last call, or `nil`. One ping is outstanding at a
    /// time and the next is posted only once it was answered, so a watchdog that takes this every
    /// round before posting sees every ping's latency once.
    func takeAnsweredLatency() -> Duration? {
        let count = answered.load(ordering: .acquiring)
        guard count != answersTaken.load(ordering: .relaxed) else { return nil }
        answersTaken.store(count, ordering: .relaxed)
        return lastLatency
    }

    /// Records one tick the loop finished, with its exact start and end on the monotonic clock:
    /// a stall on a loop that reports its ticks gets the stalled tick's start and end once it is
    /// over, not the ping's (see ``LoopTicks``). Called on the loop's thread after each tick.
    package func recordTick(startNanoseconds: UInt64, endNanoseconds: UInt64) {
        if !reportsTicks.load(ordering: .relaxed) { reportsTicks.store(true, ordering: .relaxed) }
        ticks.record(start: startNanoseconds, end: endNanoseconds, posted: postedAt.load(ordering: .acquiring))
    }

    /// The exact bounds of the busy period the ping posted at `posted` measured, if the loop's
    /// ticks tell them; `answered` is when that ping ran.
    func tickBounds(posted: MonotonicInstant, answered: MonotonicInstant) -> (start: MonotonicInstant?, end: MonotonicInstant)? {
        guard reportsTicks.load(ordering: .relaxed) else { return nil }
        return ticks.bounds(posted: posted.nanoseconds, answered: answered.nanoseconds)
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

    /// The best estimate of when the loop became busy, for the ping posted at `posted` that is
    /// still waiting: between the previous ping's answer (the loop ran then) and `posted`, the
    /// midpoint, so the error is at most half a ping period either way rather than a whole one late.
    func estimatedStart(posted: MonotonicInstant, pingPeriod: Duration) -> MonotonicInstant {
        let answered = answeredAt.load(ordering: .relaxed)
        guard answered != 0, answered < posted.nanoseconds else { return posted }
        let gap = min(Duration.nanoseconds(Int64(clamping: posted.nanoseconds - answered)), pingPeriod)
        return posted - gap / 2
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
