import CSampler
import StallwatchPolicy
import StallwatchReport
import Synchronization

/// A loop tells the watchdog it made progress: ``busy()`` when it wakes up with work, ``idle()``
/// right before it waits for more (matrix's run-loop observer, for loops that can call us).
///
/// The "busy since" stamp is set at the first `busy()` after an `idle()` and cleared by `idle()`; the
/// watchdog reports a stall when a loop has been busy longer than the threshold. Both calls are
/// lock-free and allocation-free: an atomic load, a coarse vDSO clock read and atomic stores; the
/// stamp's resolution is one kernel tick (4 ms on Debian's HZ=250).
///
/// ```swift
/// let probe = watchdog.makeProbe(name: "main-loop")
/// while let job = queue.next() {   // blocks while idle
///     probe.busy()
///     job.run()
///     probe.idle()
/// }
/// ```
public final class HeartbeatProbe: Sendable {
    /// The name reports use for this loop.
    public let name: String
    // Monotonic nanoseconds of the current busy period's start; 0 while idle.
    private let busyStamp = Atomic<UInt64>(0)
    // Kernel id of the thread that last called busy(): the thread to sample.
    private let threadID = Atomic<Int32>(0)
    // The longest busy period that ended since the watchdog last took it (coarse nanoseconds):
    // the loop-lag metric. One writer (the loop), so a load and a store, no read-modify-write.
    private let longestBusy = Atomic<UInt64>(0)
    // The last busy period that ended: its stamp and its end (coarse nanoseconds), so a stall's
    // duration ends when the loop went idle, not when the watchdog next looked.
    private let endedStamp = Atomic<UInt64>(0)
    private let endedAt = Atomic<UInt64>(0)
    // Numbers busy periods, so feedback counters know when to start again from zero.
    private let periodNumber = Atomic<UInt64>(0)
    // Watchdogs asleep without a period that watch this probe: a busy period must wake them.
    // A count, not a flag: one watchdog waking must not clear another's.
    private let sleepingWatchdogs = Atomic<Int>(0)
    // Feedback counters that crossed their threshold, for the watchdog (slow path: a lock is fine).
    private let crossings = Mutex<[FeedbackCrossing]>([])
    private let counters = Mutex<[String: FeedbackCounter]>([:])

    /// A probe for the loop called `name`. Register it with ``Watchdog/monitor(_:)-(HeartbeatProbe)``.
    public init(name: String) {
        self.name = name
    }

    /// The loop has work and is running it. Cheap enough to call on every wake-up.
    @inline(__always)
    public func busy() {
        if busyStamp.load(ordering: .relaxed) == 0 {
            threadID.store(sw_current_tid(), ordering: .relaxed)
            periodNumber.store(periodNumber.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
            // The coarse clock keeps the pair within its budget; `busySince` adds the tick back.
            busyStamp.store(MonotonicClock.coarseNanoseconds(), ordering: .releasing)
            // A watchdog asleep without a period reads the stamp after a process-wide barrier
            // (``IdleSleep``): the store above stays before the load below, so one of the two sees
            // the other's write.
            sw_compiler_fence()
            if sleepingWatchdogs.load(ordering: .relaxed) != 0 { wakeSleepingWatchdogs() }
        }
    }

    /// Wakes every watchdog (the wake-up generation): until the sleeping ones' rounds begin and
    /// they leave the count, each busy period does so again (microseconds).
    @inline(never)
    private func wakeSleepingWatchdogs() { sw_pool_wake_all() }

    /// A watchdog about to sleep without a period joins (``IdleSleep``); it leaves when it wakes.
    func wakeOnBusy(_ on: Bool) { sleepingWatchdogs.add(on ? 1 : -1, ordering: .relaxed) }

    /// The loop finished its work and is about to wait.
    @inline(__always)
    public func idle() {
        let since = busyStamp.load(ordering: .relaxed)
        if since != 0 {
            let end = MonotonicClock.coarseNanoseconds()
            let busyFor = end &- since
            if busyFor > longestBusy.load(ordering: .relaxed) { longestBusy.store(busyFor, ordering: .relaxed) }
            publishEnd(stamp: since, end: end)
        }
        busyStamp.store(0, ordering: .releasing)
    }

    /// When the busy period that `busySince` reported as `since` ended, if it has and the probe
    /// still remembers it (a later period overwrites the record).
    func end(ofPeriodSince since: MonotonicInstant) -> MonotonicInstant? {
        guard let last = lastEndedPeriod, last.since == since else { return nil }
        return last.end
    }

    /// Records a busy period's end for ``lastEndedPeriod``. The stamp doubles as the record's
    /// version: cleared first, so a reader that meets the new end never pairs it with the old stamp.
    @inline(__always)
    private func publishEnd(stamp: UInt64, end: UInt64) {
        endedStamp.store(0, ordering: .relaxed)
        endedAt.store(end, ordering: .releasing)
        endedStamp.store(stamp, ordering: .releasing)
    }

    /// The last busy period that ended, whichever it was: its start (as ``busySince`` gave it) and
    /// its end. A watchdog that ran late judges from it a stall it never saw in progress.
    var lastEndedPeriod: (since: MonotonicInstant, end: MonotonicInstant)? {
        let stamp = endedStamp.load(ordering: .acquiring)
        let end = endedAt.load(ordering: .acquiring)
        // A newer period's end may have been stored between the loads (see `publishEnd`).
        // `busySince` is the stamp plus one coarse tick: answer on that scale.
        guard stamp != 0, endedStamp.load(ordering: .relaxed) == stamp else { return nil }
        return (MonotonicInstant(nanoseconds: stamp &+ MonotonicClock.coarseResolution),
                MonotonicInstant(nanoseconds: end &+ MonotonicClock.coarseResolution))
    }

    /// The longest busy period that ended since the last call (at the coarse clock's resolution),
    /// or `nil` when none ended. Taken by the watchdog once per round for the loop-lag metric.
    func takeLongestBusyPeriod() -> Duration? {
        let longest = longestBusy.exchange(0, ordering: .relaxed)
        return longest == 0 ? nil : .nanoseconds(Int64(clamping: longest))
    }

    /// The counter of `key` in this loop's busy periods, created on first use (allocates; keep it):
    /// a `feedbackLoop` report when `threshold` occurrences fall into one busy period.
    /// - Precondition: `threshold` is at least 2.
    public func counter(for key: String, threshold: Int = 100) -> FeedbackCounter {
        precondition(threshold >= 2, "a feedback threshold below 2 reports every occurrence")
        return counters.withLock { c in
            if let existing = c[key], existing.threshold == threshold { return existing }
            let made = FeedbackCounter(key: key, threshold: threshold, probe: self)
            c[key] = made
            return made
        }
    }

    /// The number of the current (or last) busy period.
    var busyPeriod: UInt64 { periodNumber.load(ordering: .relaxed) }

    func recordFeedback(_ crossing: FeedbackCrossing) {
        crossings.withLock { list in if list.count < 64 { list.append(crossing) } }
        // A crossing outside a busy period is reported without waiting for one.
        if sleepingWatchdogs.load(ordering: .relaxed) != 0 { wakeSleepingWatchdogs() }
    }

    /// Whether a crossing waits for the watchdog.
    var hasFeedbackCrossings: Bool { crossings.withLock { !$0.isEmpty } }

    /// Feedback counters that crossed their threshold since the last call.
    func takeFeedbackCrossings() -> [FeedbackCrossing] {
        crossings.withLock { list in
            defer { list.removeAll() }
            return list
        }
    }

    /// Runs `body` between ``busy()`` and ``idle()``.
    @inlinable
    public func measure<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        busy()
        defer { idle() }
        return try body()
    }

    /// Marks the loop busy since `instant` on `thread`, for loops whose progress the watchdog
    /// observes itself (pool threads) rather than being told by the loop. Keeps an existing stamp.
    func markBusy(since instant: MonotonicInstant, thread: ThreadID) {
        threadID.store(thread.rawValue, ordering: .relaxed)
        // `busySince` adds one coarse tick to every stamp; take it off so it reads back exact.
        busyStamp.store(max(instant.nanoseconds &- MonotonicClock.coarseResolution, 1), ordering: .releasing)
    }

    /// Marks the loop idle since `instant`, for loops the watchdog observes itself: the period's
    /// recorded end is `instant`, not the moment the watchdog noticed.
    func markIdle(since instant: MonotonicInstant) {
        let since = busyStamp.load(ordering: .relaxed)
        if since != 0 { publishEnd(stamp: since, end: max(instant.nanoseconds, since) &- MonotonicClock.coarseResolution) }
        busyStamp.store(0, ordering: .releasing)
    }

    /// When the current busy period began, or `nil` while idle.
    var busySince: MonotonicInstant? {
        let stamp = busyStamp.load(ordering: .acquiring)
        // The coarse stamp can be up to one tick early: count from one tick later, so a stall is
        // reported at most one tick late and never before its threshold.
        return stamp == 0 ? nil : MonotonicInstant(nanoseconds: stamp &+ MonotonicClock.coarseResolution)
    }

    /// The thread that runs the loop, once known.
    var thread: ThreadID? {
        let t = threadID.load(ordering: .relaxed)
        return t == 0 ? nil : ThreadID(rawValue: t)
    }
}
