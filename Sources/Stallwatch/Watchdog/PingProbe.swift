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
    // A loop that reports its ticks is not pinged (see ``LoopLook``): its thread, the newest tick
    // end, the longest tick since the watchdog last took it, and whether the outstanding "ping" is
    // a look that saw the loop busy (answered by the loop's next tick end, nothing is posted).
    private let loopThread = Atomic<Int32>(0)
    private let lastTickEnd = Atomic<UInt64>(0)
    private let longestTick = Atomic<UInt64>(0)
    private let outstandingIsLook = Atomic<Bool>(false)
    // The watchdog's own state for looks (written by the watchdog thread only).
    private let seenTickEnd = Atomic<UInt64>(0)
    private let idleCPU = Atomic<UInt64>(UInt64.max)
    private let freeAt = Atomic<UInt64>(0)
    private let counters = LookCounters()
    // Loop rest (``LoopRest``; the watchdog thread only): the epoll descriptor the loop's thread
    // slept in at the last look that found it asleep, whether the last look did, and whether it
    // rests.
    private let asleepIn = Atomic<Int32>(-1)
    private let lastLookFoundAsleep = Atomic<Bool>(false)
    private let resting = Atomic<Bool>(false)
    /// Whether this probe pings the cooperative pool (``cooperativePool(name:priority:)``): then
    /// the pool's workers are looked at instead while one of them waits for work (see
    /// ``lookAtPool(_:)``), and the name they carry is learnt from the thread that ran a ping.
    let watchesCooperativePool: Bool
    private let poolWorkerName = Mutex<String?>(nil)

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

    /// Posts a ping unless one is still outstanding. Called by the watchdog each round.
    func pingIfIdle() {
        guard postedAt.load(ordering: .acquiring) == 0 else { return }
        let now = MonotonicClock.nowNanoseconds()
        counters.pings.add(1, ordering: .relaxed)
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

    /// The name of the pool's workers: the name of the thread that ran the last ping, read once
    /// (a /proc read on the watchdog thread; nothing is added to the ping itself).
    private func learntPoolWorkerName() -> String? {
        if let known = poolWorkerName.withLock({ $0 }) { return known }
        // Only a libdispatch worker's name tells its pool (see ``PoolJobWatcher``).
        guard let tid = thread, let name = PoolJobWatcher.dispatchWorkerName(tid) else { return nil }
        poolWorkerName.withLock { $0 = name }
        return name
    }

    /// The name of the pool's workers once a ping ran and told it, else `nil` (read, never learnt here).
    var knownPoolWorkerName: String? { poolWorkerName.withLock { $0 } }

    /// Called by the watchdog once per ping period, in place of ``lookOrPing()``, for a probe that
    /// ``watchesCooperativePool``, right after `watcher` scanned the pool's threads. A pool with a
    /// worker waiting for work starts a job at once (libdispatch wakes a waiting worker for each
    /// job it is given), so it is free and nothing is posted: an idle pool is never woken. Only when
    /// every worker is away from its wait is a ping posted, and the thread its report samples, until
    /// the ping runs, is one of those workers. Before the first ping ran, the pool's workers are not
    /// known by name, so it is pinged.
    func lookAtPool(_ watcher: PoolJobWatcher) {
        guard postedAt.load(ordering: .acquiring) == 0 else { return }
        guard let workerName = learntPoolWorkerName() else {
            pingIfIdle()
            return
        }
        let look = watcher.look(atPoolNamed: workerName, pingedOn: thread)
        if look.free {
            freeAtRest()
            return
        }
        counters.busy.add(1, ordering: .relaxed)
        if let worker = look.busyWorker { threadID.store(worker.rawValue, ordering: .relaxed) }
        pingIfIdle()
    }

    /// Free now without a look: the pool's look found a worker waiting for work, or it rests
    /// (``PoolRest``), or a loop rests in `epoll_wait` (``LoopRest``). Counted as a look.
    func freeAtRest() {
        guard postedAt.load(ordering: .acquiring) == 0 else { return }
        counters.looks.add(1, ordering: .relaxed)
        freeAt.store(MonotonicClock.nowNanoseconds(), ordering: .relaxed)
    }

    /// The latency of the ping answered since the last call, or `nil`. One ping is outstanding at a
    /// time and the next is posted only once it was answered, so a watchdog that takes this every
    /// round before posting sees every ping's latency once.
    func takeAnsweredLatency() -> Duration? {
        // A loop that reports ticks: its longest tick since the last call is as late as a ping
        // posted then could have been (a looked-at loop gets no ping while its ticks flow).
        let tick = reportsTicks.load(ordering: .relaxed) ? longestTick.exchange(0, ordering: .relaxed) : 0
        let count = answered.load(ordering: .acquiring)
        guard count != answersTaken.load(ordering: .relaxed) else {
            return tick == 0 ? nil : .nanoseconds(Int64(clamping: tick))
        }
        answersTaken.store(count, ordering: .relaxed)
        return max(lastLatency, .nanoseconds(Int64(clamping: tick)))
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

    /// Ends the busy period a look saw (posted at `posted`) at `ran`, the end of the loop's next
    /// tick: exactly once, whoever gets there first (the loop after its tick, or the watchdog).
    private func answerLook(posted: UInt64, ran: UInt64) {
        guard postedAt.compareExchange(expected: posted, desired: 0, ordering: .sequentiallyConsistent).exchanged else { return }
        outstandingIsLook.store(false, ordering: .relaxed)
        lastLateness.store(ran &- posted, ordering: .relaxed)
        answeredAt.store(ran, ordering: .relaxed)
        answeredPosted.store(posted, ordering: .releasing)
        answered.add(1, ordering: .releasing)
    }

    /// Called by the watchdog once per ping period, in place of a ping. A loop that reports its
    /// ticks is looked at instead of pinged (``LoopLook``): a tick ended since the last look, or its
    /// thread waits in `epoll_wait`, means it is free; otherwise it is busy since about now, and
    /// its next tick end ends that busy period (the stalled tick's exact bounds come from the
    /// ticks). Nothing is posted to it, so an idle loop is never woken. Other loops are pinged.
    func lookOrPing() {
        let posted = postedAt.load(ordering: .acquiring)
        if posted != 0 {
            // A look whose tick end came before the look was stored: the loop may be asleep now.
            guard outstandingIsLook.load(ordering: .acquiring) else { return }
            let end = lastTickEnd.load(ordering: .sequentiallyConsistent)
            if end >= posted {
                answerLook(posted: posted, ran: end)
            } else if case let tid = loopThread.load(ordering: .relaxed), tid != 0,
                      LoopLookPolicy.judge(tickEnded: false, thread: LoopLook.readThread(
                          ThreadID(rawValue: tid), idleCPU: UInt64.max, counters: counters).state) == .asleep {
                // Back in epoll_wait with no tick since: the look caught the end of the tick
                // before it was reported, and the loop was never busy after it.
                answerLook(posted: posted, ran: posted)
            }
            return
        }
        let tid = loopThread.load(ordering: .relaxed)
        guard reportsTicks.load(ordering: .acquiring), tid != 0 else {
            pingIfIdle()
            return
        }
        counters.looks.add(1, ordering: .relaxed)
        let now = MonotonicClock.nowNanoseconds()
        let end = lastTickEnd.load(ordering: .sequentiallyConsistent)
        let tickEnded = end != seenTickEnd.load(ordering: .relaxed)
        seenTickEnd.store(end, ordering: .relaxed)
        var read: (state: LoopLookPolicy.ThreadState, cpu: UInt64, epollFD: Int32?)?
        if !tickEnded {
            read = LoopLook.readThreadAndWait(ThreadID(rawValue: tid), idleCPU: idleCPU.load(ordering: .relaxed), counters: counters)
        }
        let verdict = LoopLookPolicy.judge(tickEnded: tickEnded, thread: read?.state)
        lastLookFoundAsleep.store(verdict == .asleep, ordering: .relaxed)
        switch verdict {
        case .ticking:
            idleCPU.store(UInt64.max, ordering: .relaxed)
            freeAt.store(end, ordering: .relaxed)
        case .asleep:
            idleCPU.store(read?.cpu ?? UInt64.max, ordering: .relaxed)
            freeAt.store(now, ordering: .relaxed)
            // A clock that has not moved means the same wait as the look that read the descriptor.
            if let fd = read?.epollFD { asleepIn.store(fd, ordering: .relaxed) }
        case .unknown:
            break
        case .busy:
            idleCPU.store(UInt64.max, ordering: .relaxed)
            counters.busy.add(1, ordering: .relaxed)
            generation.add(1, ordering: .relaxed)
            outstandingIsLook.store(true, ordering: .sequentiallyConsistent)
            postedAt.store(now, ordering: .sequentiallyConsistent)
            // The loop may have ended a tick between the two reads: then it was not busy after all.
            let after = lastTickEnd.load(ordering: .sequentiallyConsistent)
            if after >= now { answerLook(posted: now, ran: after) }
        }
    }

    // MARK: - loop rest

    /// The epoll descriptor the loop's thread sleeps in, if the last look (``lookOrPing()``) found
    /// it asleep there (``LoopRest`` then watches that descriptor instead of looking).
    var asleepEpollFD: Int32? {
        guard reportsTicks.load(ordering: .relaxed), lastLookFoundAsleep.load(ordering: .relaxed),
              postedAt.load(ordering: .acquiring) == 0 else { return nil }
        let fd = asleepIn.load(ordering: .relaxed)
        return fd >= 0 ? fd : nil
    }

    /// Whether the loop's thread has not run since the look that found it asleep: checked once its
    /// descriptor is watched, since an event that came before that would not wake the watchdog.
    func stillAsleep() -> Bool {
        let tid = loopThread.load(ordering: .relaxed)
        let cpu = idleCPU.load(ordering: .relaxed)
        return tid != 0 && cpu != UInt64.max && LoopLook.unmoved(ThreadID(rawValue: tid), since: cpu)
    }

    /// Whether the loop rests (free without a look until its descriptor gets an event).
    var isResting: Bool { resting.load(ordering: .relaxed) }

    /// The loop rests from now on.
    func beginRest() { resting.store(true, ordering: .relaxed) }

    /// The rest is over: the loop was asleep until `wokenAt` when its descriptor got an event
    /// (`nil` for the late look, which learns the loop's state by looking).
    func endRest(wokenAt: UInt64?) {
        resting.store(false, ordering: .relaxed)
        if let wokenAt { freeAt.store(wokenAt, ordering: .relaxed) }
    }

    /// What looks at this loop have cost and found (for benchmarks).
    package var lookCounts: LookCounters.Snapshot { counters.snapshot }

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

    /// The best estimate of when the loop became busy, for the ping posted at `posted` that is
    /// still waiting: between the previous ping's answer (the loop ran then) and `posted`, the
    /// midpoint, so the error is at most half a ping period either way rather than a whole one late.
    func estimatedStart(posted: MonotonicInstant, pingPeriod: Duration) -> MonotonicInstant {
        // The loop was last known free when a ping ran, or when a look saw it tick or sleep.
        let answered = max(answeredAt.load(ordering: .relaxed), freeAt.load(ordering: .relaxed))
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
