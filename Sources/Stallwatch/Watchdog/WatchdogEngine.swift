import CSampler
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import StallwatchPolicy
import StallwatchReport

/// One watchdog round over every loop: detect, sample, decide, report. Runs only on the watchdog's
/// own thread, so its state needs no lock.
final class WatchdogEngine {
    let configuration: WatchdogConfiguration
    let sampler: StackSampler
    let builder: ReportBuilder
    /// What reports say of the process beyond the samples, read from it (``ReportFactsGatherer``).
    let gatherer: ReportFactsGatherer
    let writer: ReportWriter?
    let logger: Logger
    /// Where events go: metrics, the event stream and the user's handler, on this thread.
    private let sink: (WatchdogEvent) -> Void
    /// Wall time spent in ``emit(_:)`` this round: a slow handler blocks the round off the CPU and
    /// off the run queue, as a stopped process would, and must not be taken for a stop.
    private var deliveryTime: Duration = .zero
    let metrics: WatchdogMetrics?
    private(set) var monitors: [ObjectIdentifier: LoopMonitor] = [:]
    private var userSources: [LoopSource] = []
    let poolWatcher: PoolJobWatcher?
    private var nextPoolScan: MonotonicInstant?
    /// Whether the log said once why pool jobs are not dated by their stamps.
    private var stampsUnusableSaid = false
    /// Whether the pool rests, unscanned until it is given work (see ``PoolRest``).
    private var poolRest: PoolRest
    /// Event loops that sleep in `epoll_wait` are watched through their descriptors rather than
    /// looked at every period, while nothing else needs the rounds (see ``LoopRest``).
    let loopRest: LoopRest
    /// The sleep without a period while every loop and the pool rest (see ``IdleSleep``).
    let idleSleep: IdleSleep
    /// This round's conclusion of ``PoolRest/isFree(at:)``: the pool needs no ping or look.
    private var poolIsFree = false
    /// Whether the last round had loops pinged or looked at every ping period: the watchdog wakes
    /// that often anyway, so an enqueue to a resting pool need not wake it.
    private var pingsEveryRound = false
    private(set) var previousRound: MonotonicInstant?
    /// This round's instant (the one every loop is judged at).
    private(set) var roundStart = MonotonicInstant(nanoseconds: 0)
    /// Thread count and runnable threads, read once per round for every loop's evidence.
    var census = ThreadCensus()
    /// The watchdog's own scheduling: when it planned to wake, and its thread's CPU and run-queue
    /// wait when it began waiting. The evidence that tells a stopped process from a late watchdog.
    private var plannedWake: MonotonicInstant?
    private var ownAtWait: (cpu: Duration, runQueueWait: Duration?, at: MonotonicInstant)?
    /// The same figures when this round began, and the time the process was found stopped while
    /// the previous round ran (a stop can land in a round as well as in a wait).
    private var ownAtRoundStart: (cpu: Duration, runQueueWait: Duration?, at: MonotonicInstant)?
    private var stoppedInRound: Duration = .zero
    private let suspensionJudge = SuspensionJudge()
    /// How late this round started (zero when on time), stated in its reports.
    private(set) var lateness: Duration = .zero
    /// Set while the sampling signal is not ours: no ring, no signal capture, only /proc evidence.
    var signalLost: SignalOwnership?
    /// Whether the failure to learn how blocked threads' requests are read was reported.
    var blockedTagFailureReported = false
    /// Whether the sampling signal may be sent now. Asking checks its handler first, once per
    /// round (``checkSignalOwnershipOnce()``): a round that sends no signal does not ask.
    var maySignal: Bool {
        checkSignalOwnershipOnce()
        return signalLost == nil
    }
    /// The round whose start the signal's handler was last checked in.
    private var signalCheckedAt: MonotonicInstant?
    /// Set once the kernel's refusal of the perf-event driver has been logged (once per watchdog).
    var perfRefusalLogged = false
    /// This round's time for one-off captures of stalled threads, and the loops that used it.
    var captureBudget = CaptureBudget(end: MonotonicInstant(nanoseconds: 0), limit: .zero)
    var cpuPolicy: CPUPolicy
    var lastProcessCPU: Duration?
    var lastCPUAt: MonotonicInstant?
    /// The process's CPU over the last reading, in cores (``cpuRound(now:)``).
    var lastProcessCPUCores: Double?
    /// Every thread's CPU time at the last reading, and the threads listed for it.
    var threadCPUBaseline = ThreadCPUBaseline()
    /// The reading's thread clocks, their storage kept from reading to reading.
    var threadCPUTimes: [(threadID: Int32, cpu: Duration)] = []
    let cpuRoster = ThreadRoster()
    /// Why the last per-thread reading gave no thread (its listing failed, or it was the reading
    /// after such a failure, which only re-bases): said by a CPU-high report that names none.
    var threadCPUUnread: String?
    /// Facts shared by the reports of one round (see ``RoundFacts``).
    var cachedRoundFacts: RoundFacts?
    /// The threads listed for ``RoundFacts``: storage kept for the next report's listing, as large
    /// as the process's thread count has been.
    var roundThreads: [ThreadID] = []
    /// How often loops that cannot say when they start are looked at.
    let schedule: DetectionSchedule
    private var nextPing: MonotonicInstant?
    /// The sampling governor and the interval every ring runs at now.
    let governor: SamplingGovernor
    var sampling: (interval: Duration, reason: SamplingFacts.Reason)

    /// A report id no other report shares (see ``ReportIDs``).
    func nextReportID() -> String { ReportIDs.next() }
    /// The watchdog thread's CPU time already counted in the metrics.
    private var reportedCPU: Duration = .zero
    let ownThread = ThreadID.current
    /// The watchdog thread's own schedstat, read twice a round (see ``SuspensionJudge``): kept open.
    private lazy var ownFiles = TaskFiles(ownThread)

    /// Called with each stall's final report, after it went to the writer (the profile exporter).
    var onFinalReport: ((StallReport) -> Void)?
    /// Called with a pinged loop's look counters when its watcher is made, and with `nil` when it
    /// is gone: what ``Watchdog/lookCounts(of:)`` reads from other threads.
    var onLookCounters: ((ObjectIdentifier, LookCounters?) -> Void)?

    init(configuration: WatchdogConfiguration, sampler: StackSampler, writer: ReportWriter?, logger: Logger,
         metrics: WatchdogMetrics?, emit: @escaping (WatchdogEvent) -> Void) {
        self.metrics = metrics
        self.configuration = configuration
        self.sampler = sampler
        self.builder = ReportBuilder(configuration: configuration, symbolizer: .shared)
        self.gatherer = ReportFactsGatherer(builder: builder, sampler: sampler)
        self.writer = writer
        self.logger = logger
        self.sink = emit
        self.loopRest = LoopRest(logger: logger)
        self.idleSleep = IdleSleep(loopRest: loopRest, avoidSignal: sampler.configuration.signal, logger: logger)
        self.cpuPolicy = CPUPolicy(settings: configuration.cpu)
        self.governor = SamplingGovernor(configuration, cores: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        self.sampling = (configuration.sampleInterval, .configured)
        self.schedule = DetectionSchedule(configuration: configuration)
        if configuration.watchPoolJobs, SamplingSupport.isAvailable {
            let watcher = PoolJobWatcher(sampler: sampler, symbolizer: .shared,
                                         inconclusiveSignalAfter: configuration.threshold / 5,
                                         unwatchedAfter: configuration.threshold)
            if watcher.isAvailable {
                poolWatcher = watcher
                let hook = sw_pool_wake_install()
                poolRest = PoolRest(installed: hook == 0)
                // Jobs are dated by their enqueue stamps where the running task can be read.
                if hook == 0 { sw_job_stamps_enable(1) }
                if hook != 0 {
                    logger.info("the pool is scanned every \(schedule.poolScanPeriod) even when idle",
                                metadata: ["reason": "\(hook == -1 ? "swift_task_enqueueGlobal_hook not found" : "another enqueue hook sits on top of Stallwatch's")"])
                }
            } else {
                poolWatcher = nil
                poolRest = PoolRest(installed: false)
                logger.warning("swift_job_run not found: cooperative pool jobs are not watched")
            }
        } else {
            poolWatcher = nil
            poolRest = PoolRest(installed: false)
        }
        if !SamplingSupport.isAvailable { reportSamplingUnavailable() }
    }

    /// Brings the monitor set in line with the registered loops.
    func sync(_ sources: [LoopSource]) {
        // A resting loop may be gone: every rest ends, and the next looks decide again.
        loopRest.loopsChanged()
        userSources = sources
        syncMonitors()
    }

    /// User loops plus one heartbeat loop per pool thread the pool watcher knows.
    private func syncMonitors() {
        // Compared in place, without sets or a joined list: pool threads come and go (they exit
        // after ~5 s idle), and every change lands here.
        let poolProbes = poolWatcher?.probes ?? []
        func isPoolProbe(_ id: ObjectIdentifier) -> Bool { poolProbes.contains { ObjectIdentifier($0) == id } }
        func isWanted(_ id: ObjectIdentifier) -> Bool { userSources.contains { $0.identity == id } || isPoolProbe(id) }
        for (id, m) in monitors where !isWanted(id) {
            cutShort(m, now: MonotonicClock.now())
            monitors[id] = nil
            if m.pinged != nil { onLookCounters?(id, nil) }
        }
        func add(_ s: LoopSource) {
            guard monitors[s.identity] == nil else { return }
            let monitor = LoopMonitor(source: s, configuration: configuration, schedule: schedule)
            if let poolWatcher, isPoolProbe(s.identity) {
                monitor.accepts = { [unowned poolWatcher] in poolWatcher.isInJob($0) }
                monitor.ownsBusyRecord = false
            }
            monitors[s.identity] = monitor
            if let pinged = monitor.pinged { onLookCounters?(s.identity, pinged.counters) }
        }
        for s in userSources { add(s) }
        for probe in poolProbes { add(.heartbeat(probe)) }
        poolIsLookedAt = poolWatcher != nil && monitors.values.contains { $0.pinged?.watchesCooperativePool == true }
    }

    /// Whether a cooperative pool's ping is replaced by looks at its workers (see
    /// ``PingedLoopWatcher/lookAtPool(_:)``), which need a scan in every round a ping is due.
    private var poolIsLookedAt = false

    /// Hands an event to its consumers, timing them (see ``deliveryTime``).
    func emit(_ event: WatchdogEvent) {
        let start = MonotonicClock.now()
        sink(event)
        deliveryTime += MonotonicClock.now() - start
    }

    /// Whether `m`'s loop has been busy past the threshold without a stall reported yet: the
    /// detector decides; this only orders the round's work.
    private func isAwaitingDetection(_ m: LoopMonitor, now: MonotonicInstant) -> Bool {
        guard !m.inStall, let since = m.source.busySince else { return false }
        return now - since >= configuration.threshold
    }

    /// Whether round pass `pass` steps `m` (see ``round()``): 0, awaiting detection with samples
    /// already; 1, awaiting detection without; 2, every loop not stepped yet.
    private func isInPass(_ pass: Int, _ m: LoopMonitor, now: MonotonicInstant) -> Bool {
        switch pass {
        case 0: isAwaitingDetection(m, now: now) && !m.samples.isEmpty
        case 1: isAwaitingDetection(m, now: now)
        default: true
        }
    }

    /// Runs one round: the round's own upkeep, a look at the pool, a step of every loop's
    /// detector, then the time of the next round (the earliest any of them needs). Returns it.
    func round() -> MonotonicInstant {
        let now = MonotonicClock.now()
        let stopped = beginRound(now: now)
        var next = now + configuration.checkPeriod
        let pingDue = nextPing.map { now >= $0 } ?? true
        lookAtPool(now: now, pingDue: pingDue, next: &next)
        let loops = stepLoops(now: now, stoppedFor: stopped, pingDue: pingDue, next: &next)
        next = nextRound(now: now, after: loops, pingDue: pingDue, next: next)
        endRound()
        return next
    }

    /// What the loops' steps of one round say about the rounds to come.
    private struct LoopRoundSummary {
        /// A loop is busy, sampled or in a stall.
        var anyActive = false
        /// A pinged loop wants its next ping.
        var anyPing = false
        /// The same, counting other loops than the cooperative pool's.
        var anyOtherPing = false
    }

    /// The round's upkeep before any loop is looked at: the watchdog's own suspension, signal
    /// ownership, process metrics, the capture budget. Returns how long the process was stopped.
    private func beginRound(now: MonotonicInstant) -> Duration? {
        roundStart = now
        deliveryTime = .zero
        // A sleep without a period has no planned wake to be late against: a probe's wake request
        // stands for it, or a SIGSTOP between that request and this round passes for a stall.
        if let requested = idleSleep.wakeRequestedAt() { plannedWake = requested }
        idleSleep.woke()
        var stopped = judgeSuspension(now: now)
        if stoppedInRound > .zero {
            // Stopped while the previous round ran: its loops' busy time includes the stop too.
            stopped = (stopped ?? .zero) + stoppedInRound
            stoppedInRound = .zero
        }
        // Every round while a ring runs (a tick meeting another handler's default disposition
        // would kill the process), before any signal is sent, and once a second for the metric.
        if monitors.values.contains(where: { $0.ring != nil })
            || signalCheckedAt.map({ now - $0 >= Self.signalCheckPeriod }) ?? true {
            checkSignalOwnershipOnce()
        }
        reportBlockedTagFailure()
        metrics?.updateProcess(now: now)
        captureBudget = CaptureBudget(end: now + schedule.captureTime, limit: schedule.captureTime)
        return stopped
    }

    /// The cooperative pool's scan when one is due (after an enqueue woke a resting pool, on its
    /// period, or while a job runs); moves `next` to the next scan.
    private func lookAtPool(now: MonotonicInstant, pingDue: Bool, next: inout MonotonicInstant) {
        guard let poolWatcher else { return }
        let scanAfterWork = pingsEveryRound ? schedule.poolScanHalfPeriod : schedule.poolScanPeriod
        if let until = poolRest.endIfWoken(now: now, scanAfter: scanAfterWork) {
            // Every worker stayed outside any job until the enqueue; a job it began is still
            // there one scan period on (half a period, for a watchdog woken by its ping rounds
            // rather than the enqueue: the first of them after it), and dated from it.
            poolWatcher.rested(until: until)
            nextPoolScan = until + scanAfterWork
        }
        poolIsFree = poolRest.isFree(at: now)
        // A pool looked at in place of its ping is looked at through a scan of this round.
        if nextPoolScan.map({ now >= $0 }) ?? true || (!poolIsFree && (poolWatcher.anyInJob || (pingDue && poolIsLookedAt))) {
            // A watchdog asleep in its epoll set is woken by the pool timer once, when the
            // scan is due, rather than at the enqueue and again for the scan.
            poolRest.prepareScan(now: now, wake: !pingsEveryRound,
                                 timerDelay: loopRest.hasSet ? schedule.poolScanPeriod : nil)
            if poolWatcher.scan(now: now, maySignal: maySignal) { syncMonitors() }
            if !stampsUnusableSaid, let why = PoolJobStamps.unusableReason {
                logger.notice("pool jobs are dated by scans, not by their enqueue stamps", metadata: ["reason": "\(why)"])
                stampsUnusableSaid = true
            }
            for note in poolWatcher.takeUnwatchedNotes() {
                logger.warning("pool worker not watched", metadata: ["why": "\(note)"])
                emit(.error(note))
            }
            poolRest.scanned(quiet: poolWatcher.lastScanFoundQuiet, now: now)
            poolIsFree = poolRest.isResting
            // At rest, the late scan catches work that reached a worker without the enqueue.
            nextPoolScan = now + (poolRest.isResting ? schedule.idlePoll : schedule.poolScanPeriod)
        }
        // A scan due after an enqueue rides the ping rounds when there are any.
        if let scan = nextPoolScan, scan < next, !(pingsEveryRound && poolRest.isFree(at: now)) { next = scan }
    }

    /// Steps every loop's detector once, in the order `isInPass(_:_:now:)` gives, and posts the
    /// pings due; moves `next` to the earliest time a loop's detector or ring needs a round.
    private func stepLoops(now: MonotonicInstant, stoppedFor stopped: Duration?, pingDue: Bool,
                           next: inout MonotonicInstant) -> LoopRoundSummary {
        // The late look: resting loops are looked at again even without an event.
        if let late = loopRest.lateLookAt, now >= late { loopRest.endAll() }
        var summary = LoopRoundSummary()
        loopRest.roundBegan()
        // Three passes: loops whose busy period has passed the threshold and that are not reported
        // yet go first — those with samples, then those without, whose report first waits for a
        // one-off capture of a thread that may not get a CPU for a while. With many loops stalled
        // at once, the round's evidence and samples of the others (tens of ms on saturated CPUs)
        // would otherwise come before their detection.
        // Within each pass, the pool's job loops before the others: a starved pool's report lists
        // its blocked jobs as their own reports of the same round tell them.
        for pass in 0..<6 {
            for m in monitors.values where m.steppedInRound != now
                && (pass % 2 == 0) != m.ownsBusyRecord && isInPass(pass / 2, m, now: now) {
                stepLoop(m, now: now, stoppedFor: stopped, pingDue: pingDue, summary: &summary, next: &next)
            }
        }
        return summary
    }

    /// One loop's step of the round: its lag, busy-loop and feedback watches, its detector, then
    /// its ping or look when one is due.
    private func stepLoop(_ m: LoopMonitor, now: MonotonicInstant, stoppedFor stopped: Duration?, pingDue: Bool,
                          summary: inout LoopRoundSummary, next: inout MonotonicInstant) {
        m.steppedInRound = now
        // Before the next ping is posted: the answered one's latency is read exactly once.
        let lag = m.takeLag()
        if let metrics, let lag { metrics.recordLag(loop: m.source.name, lag) }
        watchBusyLoop(m, pingLatency: lag, now: now)
        if case .heartbeat(let p) = m.source { reportFeedback(of: p, in: m) }
        let settled = step(m, now: now, stoppedFor: stopped)
        // After the step: a new ping posted before it would hide when the answered one ran.
        if let p = m.pinged { postPing(p, now: now, settled: settled, pingDue: pingDue, summary: &summary) }
        // Wake exactly when a busy loop becomes suspect (to start sampling: the report needs
        // samples from before the threshold) and when it crosses the threshold.
        m.detector.forEachWakeTime { t in if t > now && t < next { next = t } }
        if m.source.busySince != nil || m.ring != nil || m.inStall { summary.anyActive = true }
        if m.ring != nil {
            // Drain often enough that the ring never wraps.
            let drainBy = now + configuration.sampleInterval * max(configuration.ringCapacity - 2, 1)
            if drainBy < next { next = drainBy }
        }
    }

    /// A pinged loop after its step: free at rest, or its next ping or look when one is due.
    private func postPing(_ p: PingedLoopWatcher, now: MonotonicInstant, settled: Bool, pingDue: Bool, summary: inout LoopRoundSummary) {
        if p.watchesCooperativePool && poolIsFree {
            // Every worker waits for work and the pool was given none: free, with no
            // ping and no look due until an enqueue ends the rest.
            p.freeAtRest()
        } else if p.isResting {
            // Asleep in epoll_wait, its descriptor watched: free until it gets an event.
            p.freeAtRest()
        } else {
            summary.anyPing = true
            // The pool's own ping stops while the pool rests: only other loops' keep the
            // rounds going.
            if !p.watchesCooperativePool { summary.anyOtherPing = true }
            if pingDue && settled {
                if p.watchesCooperativePool, let poolWatcher, poolWatcher.lastScan == now {
                    p.lookAtPool(poolWatcher)
                    loopRest.loopAwake()
                } else {
                    p.lookOrPing()
                    loopRest.lookedAt(p)
                }
            } else {
                loopRest.loopAwake()
            }
        }
    }

    /// When the next round runs, from `next` (what the pool and the loops asked for), the rests,
    /// the idle poll and the ping period; also governs sampling and the CPU watch of this round.
    private func nextRound(now: MonotonicInstant, after loops: LoopRoundSummary, pingDue: Bool,
                           next planned: MonotonicInstant) -> MonotonicInstant {
        var next = planned
        var loops = loops
        // Every looked-at loop asleep and nothing else wanting 40 ms rounds: they rest.
        let poolNeedsRounds = poolWatcher != nil && !poolRest.isResting
        if pingDue, loopRest.roundEnded(othersAwake: loops.anyActive || poolNeedsRounds, now: now,
                                        lateLookAfter: schedule.idlePoll) {
            loops.anyPing = false
            loops.anyOtherPing = false
        }
        governSampling()
        cpuRound(now: now)
        previousRound = now
        if !loops.anyActive {
            // Nothing is busy: a heartbeat loop that turns busy right after this round is seen by
            // the next one within 0.9 × threshold, and then woken for exactly at its threshold, so
            // polling faster than that only costs wake-ups (about 100 µs of CPU each on a VM).
            var idlePoll = now + schedule.idlePoll
            if let scan = nextPoolScan, scan < idlePoll { idlePoll = scan }
            if idlePoll > next { next = idlePoll }
        }
        if let late = loopRest.lateLookAt, late < next { next = max(late, now) }
        pingsEveryRound = loops.anyOtherPing && schedule.pingPeriod <= schedule.poolScanPeriod
        if loops.anyPing {
            // A ping-probed loop's stall is known only from a ping it leaves waiting: the next
            // ping is due one ping period on, whatever else is quiet.
            if pingDue { nextPing = now + schedule.pingPeriod }
            if let ping = nextPing, ping < next { next = max(ping, now) }
        }
        if !loops.anyActive, !loops.anyPing, let until = idleSleepEnd(now: now), until > next { next = until }
        plannedWake = next
        return next
    }

    /// Until when the watchdog may sleep with nothing to look at before a loop's event, the pool's
    /// enqueue, a heartbeat probe's `busy()` or the process's CPU use wakes it (``IdleSleep``);
    /// `nil` when it keeps its rounds. Called once no loop is busy or pinged.
    private func idleSleepEnd(now: MonotonicInstant) -> MonotonicInstant? {
        // Resting loops nested in epoll may lose a wake: their late look stays.
        guard !loopRest.isResting || loopRest.keepsWakes else { return nil }
        if poolWatcher != nil,
           !poolRest.wakesWatchdog(timerDelay: loopRest.hasSet ? schedule.poolScanPeriod : nil) { return nil }
        // A process that uses CPU keeps the CPU watch's rounds (a reading every second).
        guard cpuPolicy.sustainedPhase == .idle,
              (lastProcessCPUCores ?? 0) < configuration.cpu.sustainedStartFraction / 2 else { return nil }
        let heartbeats = monitors.values.lazy.compactMap { m -> HeartbeatProbe? in
            if case .heartbeat(let p) = m.source { return p } else { return nil }
        }
        // Half a second of CPU at the rate that starts the CPU watch's tracking wakes the watchdog.
        let cpuBeforeWake = Duration.milliseconds(500) * configuration.cpu.sustainedStartFraction
        guard idleSleep.begin(heartbeats: heartbeats, cpuBeforeWake: cpuBeforeWake) else { return nil }
        var bound = IdleSleep.longest
        if let interval = metrics?.process?.interval, interval < bound { bound = interval }
        return now + bound
    }

    /// The round's end: the watchdog's own CPU and run-queue figures, its metrics.
    private func endRound() {
        let own = ownThreadFigures()
        ownAtWait = (own.cpu, own.runQueueWait, MonotonicClock.now())
        judgeStopInRound(own: own)
        if let metrics {
            metrics.recordRound(lateness: lateness, watchdogCPU: own.cpu - reportedCPU)
            var stats = sw_sampler_stats_t()
            sw_sampler_stats(&stats)
            metrics.recordCaptureTimeouts(total: stats.timeouts)
            metrics.recordSignalsSent(total: stats.sent)
        }
        reportedCPU = own.cpu
    }

    func shutdown() {
        idleSleep.close()
        loopRest.close()
        if poolRest.installed {
            sw_job_stamps_enable(0)
            sw_pool_wake_uninstall()
        }
        let now = MonotonicClock.now()
        for (id, m) in monitors {
            cutShort(m, now: now)
            if m.pinged != nil { onLookCounters?(id, nil) }
        }
        monitors.removeAll()
    }

    // MARK: - blocked threads' requests

    /// Says once why blocked threads cannot name their request, if learning how failed.
    private func reportBlockedTagFailure() {
        guard !blockedTagFailureReported, let message = BlockedRequestTags.failure else { return }
        blockedTagFailureReported = true
        logger.error("request attribution of blocked threads is off", metadata: ["reason": "\(message)"])
        emit(.error(message))
    }

    // MARK: - signal ownership

    /// Says once, as the watchdog starts, what a build without the sampler goes without; from then
    /// on the rounds run as after a lost signal (no ring, no capture), and the checks that would
    /// find the handler never installed, or blocked threads' requests unreadable, stay quiet: both
    /// follow from what was said here.
    private func reportSamplingUnavailable() {
        signalLost = .notInstalled
        blockedTagFailureReported = true
        logger.error("stack sampling is not available", metadata: ["reason": "\(SamplingSupport.unavailableMessage)"])
        emit(.error(SamplingSupport.unavailableMessage))
    }

    /// How often the signal's handler is checked while nothing is sampled and no signal is sent.
    static let signalCheckPeriod = Duration.seconds(1)

    /// ``checkSignalOwnership()``, unless this round did already.
    private func checkSignalOwnershipOnce() {
        guard signalCheckedAt != roundStart else { return }
        signalCheckedAt = roundStart
        checkSignalOwnership()
    }

    /// Notices within one round that another handler took the sampling signal over. Then rings are
    /// stopped at once (a tick meeting a default disposition would kill the process), one `.error`
    /// event says so, and stalls are still detected and classified from /proc, with the stacks of
    /// blocked threads; or, if configured, our handler is installed again, chaining to theirs.
    private func checkSignalOwnership() {
        let ownership = sampler.signalOwnership
        metrics?.recordSignal(owned: ownership == .ours, lostNow: ownership != .ours && signalLost != ownership
                                  && ownership != .notInstalled)
        if ownership == .ours {
            if signalLost != nil {
                logger.notice("the sampling signal is handled by Stallwatch again; sampling resumes")
                signalLost = nil
            }
            return
        }
        if configuration.reclaimSignal, ownership != .notInstalled, (try? sampler.reclaimSignal()) != nil,
           sampler.signalOwnership == .ours {
            logger.warning("the sampling signal was taken over; reinstalled the sampling handler, chaining to the other one",
                           metadata: ["was": "\(ownership.description)"])
            signalLost = nil
            return
        }
        guard signalLost != ownership else { return }
        signalLost = ownership
        for m in monitors.values { m.stopSampling() }
        let message = "\(ownership.description) (signal \(sampler.configuration.signal)): running threads are no longer sampled; stalls are still detected and classified, blocked threads' stacks still come from /proc. Set reclaimSignal or choose another signal."
        logger.error("sampling signal lost", metadata: ["reason": "\(message)"])
        emit(.error(message))
    }

    // MARK: - suspension

    /// The watchdog thread's CPU time and run-queue wait, twice a round. Both from one `pread` of
    /// its schedstat: its CPU clock (a system call of its own, a tenth of an idle round's CPU) says
    /// the same but for the running slice's last few ms, far below what the suspension judge counts.
    private func ownThreadFigures() -> (cpu: Duration, runQueueWait: Duration?) {
        var run: UInt64 = 0, wait: UInt64 = 0, slices: UInt64 = 0
        guard ownFiles.schedstat(run: &run, wait: &wait, timeslices: &slices) == 0 else {
            return ((try? ThreadCPUClock(ownThread).elapsed()) ?? .zero, nil)
        }
        return (.nanoseconds(Int64(clamping: run)), .nanoseconds(Int64(clamping: wait)))
    }

    /// A round that took far longer than its CPU time and run-queue wait explain was stopped part
    /// way (SIGSTOP between two reads): the next round counts that as stopped time. The bar is far
    /// higher than for a wait: a round also blocks, without CPU and off the run queue, on captures'
    /// answers (the capture budget, plus up to 20 ms for each busy pool thread the pool watcher
    /// signals) and on page faults in symbol files; taking those for a stop would shorten real
    /// stalls. Half the threshold: a shorter stop cannot make a free loop look stalled by itself.
    /// Time in event handlers is left out: a handler that sleeps or blocks looks exactly like a
    /// stop (a stop inside a handler is missed; a handler taken for a stop would shorten every
    /// stall in progress by its length).
    private func judgeStopInRound(own: (cpu: Duration, runQueueWait: Duration?)) {
        guard let start = ownAtRoundStart, let end = ownAtWait else { return }
        let wall = end.at - start.at - deliveryTime
        let blockingAllowed = max(schedule.captureTime * 2, configuration.threshold / 2)
        guard wall > blockingAllowed else { return }
        var waitDelta: Duration?
        if let a = own.runQueueWait, let b = start.runQueueWait { waitDelta = a - b }
        let stop = suspensionJudge.stoppedTime(lateness: wall - blockingAllowed, runQueueWait: waitDelta, cpuTime: own.cpu - start.cpu) ?? .zero
        guard stop > .zero else { return }
        stoppedInRound = stop
        logger.info("process was stopped during a watchdog round; stopped time is not counted as busy", metadata: [
            "stopped": "\(stop)", "round": "\(wall)"])
    }

    /// How long the process was stopped while the watchdog waited (see ``SuspensionJudge``); also
    /// records and logs the watchdog's own lateness. `nil` when there is no evidence.
    private func judgeSuspension(now: MonotonicInstant) -> Duration? {
        guard let planned = plannedWake, let before = ownAtWait else {
            lateness = .zero
            return .zero
        }
        // Late as seen by the loops: from the planned instant. Only the part spent waiting can be
        // a stop: a round that ran past the plan was running (or blocked on a capture), not stopped.
        let late = now > planned ? now - planned : .zero
        let waitedFrom = max(planned, before.at)
        let lateInWait = now > waitedFrom ? now - waitedFrom : .zero
        // On time (or late by less than any stop the judge counts): a sleeping thread gained no
        // CPU, and the wake-up's run-queue wait is too short to judge, so the figures read when
        // the wait began stand for this round's start (a pread of schedstat saved each round).
        // judgeStopInRound then counts that short wait as the round's: stops are under-, never
        // over-counted.
        guard lateInWait > suspensionJudge.minimumStop || late > schedule.lateWarning else {
            ownAtRoundStart = (before.cpu, before.runQueueWait, now)
            lateness = late
            return .zero
        }
        let after = ownThreadFigures()
        ownAtRoundStart = (after.cpu, after.runQueueWait, now)
        var waitDelta: Duration?
        if let a = after.runQueueWait, let b = before.runQueueWait { waitDelta = a - b }
        let stopped = suspensionJudge.stoppedTime(lateness: lateInWait, runQueueWait: waitDelta, cpuTime: after.cpu - before.cpu)
        lateness = late - (stopped ?? .zero)
        if let stopped, stopped > .zero {
            logger.info("process was stopped; stopped time is not counted as busy", metadata: [
                "stopped": "\(stopped)", "late": "\(late)"])
        }
        if lateness > schedule.lateWarning {
            logger.warning("watchdog woke late", metadata: [
                "late": "\(lateness)", "runQueueWait": "\(waitDelta.map { "\($0)" } ?? "unknown")"])
        }
        return stopped
    }

}
