import StallwatchPolicy
import StallwatchReport

/// The watchdog's side of one ``PingProbe``, on its thread only: which answers it has taken, and,
/// for a loop that reports its ticks or is the cooperative pool, how the loop is looked at instead
/// of pinged and whether it rests, and what its looks cost. The probe keeps only what its pings
/// post; a loop's ticks go to its ``LoopTickRecord``.
///
/// A loop that reports its ticks is looked at (``LoopLook``): a tick ended since the last look, or
/// its thread waits in `epoll_wait`, means it is free; otherwise it is busy since about now, and its
/// next tick end ends that busy period. A cooperative pool with a worker waiting for work is free.
/// Nothing is posted to either, so an idle loop or pool is never woken. Other loops are pinged.
final class PingedLoopWatcher {
    let probe: PingProbe
    /// What the loop reports of its ticks, if it does.
    let ticks: LoopTickRecord?
    /// What this watcher's looks and pings cost and found (for benchmarks and tests).
    let counters = LookCounters()
    /// The probe's answered count at the last ``takeAnsweredLatency()``.
    private var answersTaken: UInt64 = 0
    /// The tick end the last look saw (monotonic ns).
    private var seenTickEnd: UInt64 = 0
    /// The loop thread's CPU time when the last look found it asleep (`UInt64.max`: not asleep).
    private var idleCPU = UInt64.max
    /// When a look last found the loop free (monotonic ns).
    private var freeAt: UInt64 = 0
    /// The epoll descriptor the loop's thread slept in at the last look that found it asleep, and
    /// whether the last look did (``LoopRest`` then watches that descriptor).
    private var asleepIn: Int32 = -1
    private var lastLookFoundAsleep = false
    /// Whether the loop rests: free without a look until its descriptor gets an event.
    private(set) var isResting = false
    /// The name of the pool's workers, once a ping ran on one and told it (pool probes only).
    private(set) var knownPoolWorkerName: String?

    init(probe: PingProbe) {
        self.probe = probe
        self.ticks = probe.target.tickRecord
        // Answers before this watcher (a probe monitored again) are not this loop's lag now.
        answersTaken = probe.answeredCount
    }

    /// The latency of the ping answered since the last call, or `nil`. One ping is outstanding at a
    /// time and the next is posted only once it was answered, so a watchdog that takes this every
    /// round before posting sees every ping's latency once.
    func takeAnsweredLatency() -> Duration? {
        // A loop that reports ticks: its longest tick since the last call is as late as a ping
        // posted then could have been (a looked-at loop gets no ping while its ticks flow).
        let tick = Duration.nanoseconds(Int64(clamping: ticks?.takeLongestTick() ?? 0))
        let count = probe.answeredCount
        guard count != answersTaken else { return tick == .zero ? nil : tick }
        answersTaken = count
        return max(probe.lastLatency, tick)
    }

    /// Whether the probe pings the cooperative pool: then the pool's workers are looked at instead
    /// while one of them waits for work.
    var watchesCooperativePool: Bool { probe.target.isCooperativePool }

    /// Called once per ping period, in place of ``lookOrPing()``, for a probe that
    /// ``watchesCooperativePool``, right after `watcher` scanned the pool's threads. A
    /// pool with a worker waiting for work starts a job at once (libdispatch wakes a waiting worker
    /// for each job it is given), so it is free and nothing is posted. Only when every worker is
    /// away from its wait is a ping posted, and the thread its report samples, until the ping runs,
    /// is one of those workers. Before the first ping ran, the pool's workers are not known by
    /// name, so it is pinged.
    func lookAtPool(_ watcher: PoolJobWatcher) {
        guard probe.postedNanoseconds == 0 else { return }
        guard let workerName = learntPoolWorkerName() else {
            ping()
            return
        }
        let look = watcher.look(atPoolNamed: workerName, pingedOn: probe.thread)
        if look.free {
            freeAtRest()
            return
        }
        counters.busy.add(1, ordering: .relaxed)
        if let worker = look.busyWorker { probe.noteBusyWorker(worker) }
        ping()
    }

    /// Posts a ping unless one is outstanding, counted.
    private func ping() {
        if probe.pingIfIdle() { counters.pings.add(1, ordering: .relaxed) }
    }

    /// The name of the pool's workers: the name of the thread that ran the last ping, read once
    /// (a /proc read; nothing is added to the ping itself).
    private func learntPoolWorkerName() -> String? {
        if let knownPoolWorkerName { return knownPoolWorkerName }
        // Only a libdispatch worker's name tells its pool (see ``PoolJobWatcher``).
        guard let tid = probe.thread, let name = PoolJobWatcher.dispatchWorkerName(tid) else { return nil }
        knownPoolWorkerName = name
        return name
    }

    /// Free now without a look: the pool's look found a worker waiting for work, or it rests
    /// (``PoolRest``), or a loop rests in `epoll_wait` (``LoopRest``). Counted as a look.
    func freeAtRest() {
        guard probe.postedNanoseconds == 0 else { return }
        counters.looks.add(1, ordering: .relaxed)
        freeAt = MonotonicClock.nowNanoseconds()
    }

    /// Called once per ping period, in place of a ping: a loop that reports its ticks is looked at,
    /// others are pinged.
    func lookOrPing() {
        let posted = probe.postedNanoseconds
        if posted != 0 {
            // A look whose tick end came before the look was stored: the loop may be asleep now.
            guard let ticks, ticks.outstandingLook else { return }
            let end = ticks.lastTickEndNanoseconds
            if end >= posted {
                ticks.answerLook(posted: posted, ran: end, of: probe)
            } else if let tid = ticks.tickingThread,
                      LoopLookPolicy.judge(tickEnded: false, thread: LoopLook.readThread(
                          tid, idleCPU: UInt64.max, counters: counters).state) == .asleep {
                // Back in epoll_wait with no tick since: the look caught the end of the tick
                // before it was reported, and the loop was never busy after it.
                ticks.answerLook(posted: posted, ran: posted, of: probe)
            }
            return
        }
        guard let ticks, let tid = ticks.tickingThread else {
            ping()
            return
        }
        counters.looks.add(1, ordering: .relaxed)
        let now = MonotonicClock.nowNanoseconds()
        let end = ticks.lastTickEndNanoseconds
        let tickEnded = end != seenTickEnd
        seenTickEnd = end
        var read: (state: LoopLookPolicy.ThreadState, cpu: UInt64, epollFD: Int32?)?
        if !tickEnded {
            read = LoopLook.readThreadAndWait(tid, idleCPU: idleCPU, counters: counters)
        }
        let verdict = LoopLookPolicy.judge(tickEnded: tickEnded, thread: read?.state)
        lastLookFoundAsleep = verdict == .asleep
        switch verdict {
        case .ticking:
            idleCPU = UInt64.max
            freeAt = end
        case .asleep:
            idleCPU = read?.cpu ?? UInt64.max
            freeAt = now
            // A clock that has not moved means the same wait as the look that read the descriptor.
            if let fd = read?.epollFD { asleepIn = fd }
        case .unknown:
            break
        case .busy:
            idleCPU = UInt64.max
            counters.busy.add(1, ordering: .relaxed)
            ticks.beginLook(at: now, of: probe)
        }
    }

    // MARK: - loop rest

    /// The epoll descriptor the loop's thread sleeps in, if the last look found it asleep there
    /// (``LoopRest`` then watches that descriptor instead of looking).
    var asleepEpollFD: Int32? {
        guard ticks?.isReportingTicks == true, lastLookFoundAsleep, probe.postedNanoseconds == 0 else { return nil }
        return asleepIn >= 0 ? asleepIn : nil
    }

    /// Whether the loop's thread has not run since the look that found it asleep: checked once its
    /// descriptor is watched, since an event that came before that would not wake the watchdog.
    func stillAsleep() -> Bool {
        guard let tid = ticks?.tickingThread, idleCPU != UInt64.max else { return false }
        return LoopLook.unmoved(tid, since: idleCPU)
    }

    /// The loop rests from now on.
    func beginRest() { isResting = true }

    /// The rest is over: the loop was asleep until `wokenAt` when its descriptor got an event
    /// (`nil` for the late look, which learns the loop's state by looking).
    func endRest(wokenAt: UInt64?) {
        isResting = false
        if let wokenAt { freeAt = wokenAt }
    }

    /// The best estimate of when the loop became busy, for the ping posted at `posted` that is
    /// still waiting: between the previous ping's answer (the loop ran then) and `posted`, the
    /// midpoint, so the error is at most half a ping period either way rather than a whole one late.
    func estimatedStart(posted: MonotonicInstant, pingPeriod: Duration) -> MonotonicInstant {
        // The loop was last known free when a ping ran, or when a look saw it tick or sleep.
        let answered = max(probe.answeredAtNanoseconds, freeAt)
        guard answered != 0, answered < posted.nanoseconds else { return posted }
        let gap = min(Duration.nanoseconds(Int64(clamping: posted.nanoseconds - answered)), pingPeriod)
        return posted - gap / 2
    }
}
