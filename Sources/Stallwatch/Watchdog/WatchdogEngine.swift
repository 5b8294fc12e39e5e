import CSampler
import Glibc
import Logging
import StallwatchPolicy

/// One watchdog round over every loop: detect, sample, decide, report. Runs only on the watchdog's
/// own thread, so its state needs no lock.
final class WatchdogEngine {
    let configuration: WatchdogConfiguration
    let sampler: StackSampler
    let builder: ReportBuilder
    let writer: ReportWriter?
    let logger: Logger
    let emit: (WatchdogEvent) -> Void
    let metrics: WatchdogMetrics?
    private(set) var monitors: [ObjectIdentifier: LoopMonitor] = [:]
    private var userSources: [LoopSource] = []
    private let poolWatcher: PoolJobWatcher?
    private var nextPoolScan: MonotonicInstant?
    private var previousRoundAt: MonotonicInstant?
    /// The watchdog's own scheduling: when it planned to wake, and its thread's CPU and run-queue
    /// wait when it began waiting. The evidence that tells a stopped process from a late watchdog.
    private var plannedWake: MonotonicInstant?
    private var ownAtWait: (cpu: Duration, runQueueWait: Duration?, at: MonotonicInstant)?
    private let suspensionJudge = SuspensionJudge()
    /// How late this round started (zero when on time), stated in its reports.
    private(set) var lateness: Duration = .zero
    /// Set while the sampling signal is not ours: no ring, no signal capture, only /proc evidence.
    private var signalLost: SignalOwnership?
    var maySignal: Bool { signalLost == nil }
    /// When this round's time for one-off captures of stalled threads runs out.
    private var captureBudgetEnd = MonotonicInstant(nanoseconds: 0)
    private var cpuPolicy: CPUPolicy
    private var lastProcessCPU: Duration?
    private var lastCPUAt: MonotonicInstant?
    private var lastThreadCPU: [Int32: Duration] = [:]
    /// The sampling governor and the interval every ring runs at now.
    let governor: SamplingGovernor
    var sampling: (interval: Duration, reason: SamplingFacts.Reason)

    /// A report id no other report shares (see ``ReportIDs``).
    func nextReportID() -> String { ReportIDs.next() }
    /// The watchdog thread's CPU time already counted in the metrics.
    private var reportedCPU: Duration = .zero
    let ownThread = ThreadID.current

    init(configuration: WatchdogConfiguration, sampler: StackSampler, writer: ReportWriter?, logger: Logger,
         metrics: WatchdogMetrics?, emit: @escaping (WatchdogEvent) -> Void) {
        self.metrics = metrics
        self.configuration = configuration
        self.sampler = sampler
        self.builder = ReportBuilder(configuration: configuration, symbolizer: .shared, sampler: sampler)
        self.writer = writer
        self.logger = logger
        self.emit = emit
        self.cpuPolicy = CPUPolicy(settings: configuration.cpu)
        self.governor = SamplingGovernor(configuration, cores: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        self.sampling = (configuration.sampleInterval, .configured)
        if configuration.watchPoolJobs {
            let watcher = PoolJobWatcher(sampler: sampler, symbolizer: .shared)
            if watcher.isAvailable {
                poolWatcher = watcher
            } else {
                poolWatcher = nil
                logger.warning("swift_job_run not found: cooperative pool jobs are not watched")
            }
        } else {
            poolWatcher = nil
        }
    }

    /// Brings the monitor set in line with the registered loops.
    func sync(_ sources: [LoopSource]) {
        userSources = sources
        syncMonitors()
    }

    /// User loops plus one heartbeat loop per pool thread the pool watcher knows.
    private func syncMonitors() {
        let sources = userSources + (poolWatcher?.probes.map(LoopSource.heartbeat) ?? [])
        let ids = Set(sources.map(\.identity))
        for (id, m) in monitors where !ids.contains(id) {
            finishStall(m, now: MonotonicClock.now())
            m.forgetStall()
            monitors[id] = nil
        }
        let poolIDs = Set(poolWatcher?.probes.map { ObjectIdentifier($0) } ?? [])
        for s in sources where monitors[s.identity] == nil {
            let monitor = LoopMonitor(source: s, configuration: configuration)
            if let poolWatcher, poolIDs.contains(s.identity) {
                monitor.accepts = { [unowned poolWatcher] in poolWatcher.isInJob($0) }
            }
            monitors[s.identity] = monitor
        }
    }

    /// Runs one round. Returns when the next round should run.
    func round() -> MonotonicInstant {
        let now = MonotonicClock.now()
        let stopped = judgeSuspension(now: now)
        checkSignalOwnership()
        metrics?.updateProcess(now: now)
        captureBudgetEnd = now + max(configuration.threshold / 20, .milliseconds(20))
        var next = now + configuration.checkPeriod
        if let poolWatcher {
            if poolWatcher.anyInJob || nextPoolScan.map({ now >= $0 }) ?? true {
                if poolWatcher.scan(now: now, maySignal: maySignal) { syncMonitors() }
                nextPoolScan = now + configuration.poolScanPeriod
            }
            if let scan = nextPoolScan, scan < next { next = scan }
        }
        var anyActive = false
        for m in monitors.values {
            // Before the next ping is posted: the answered one's latency is read exactly once.
            let lag = m.source.takeLag()
            if let metrics, let lag { metrics.recordLag(loop: m.source.name, lag) }
            watchBusyLoop(m, pingLatency: lag, now: now)
            if case .ping(let p) = m.source { p.pingIfIdle() }
            if case .heartbeat(let p) = m.source { reportFeedback(of: p) }
            step(m, now: now, stoppedFor: stopped)
            // Wake exactly when a busy loop becomes suspect (to start sampling: the report needs
            // samples from before the threshold) and when it crosses the threshold, not up to a
            // period later.
            if let since = m.source.busySince, m.stallSince == nil {
                let suspect = since + configuration.threshold * configuration.suspicionFraction + .milliseconds(1)
                let due = since + configuration.threshold + .milliseconds(1)
                for t in [suspect, due] where t > now && t < next { next = t }
            }
            if m.source.busySince != nil || m.ring != nil || m.stallSince != nil { anyActive = true }
            if m.ring != nil {
                // Drain often enough that the ring never wraps.
                let drainBy = now + configuration.sampleInterval * max(configuration.ringCapacity - 2, 1)
                if drainBy < next { next = drainBy }
            }
        }
        governSampling()
        cpuRound(now: now)
        previousRoundAt = now
        if !anyActive {
            // Nothing is busy: a loop that turns busy right after this round is seen by the next one
            // within 0.9 × threshold, and then woken for exactly at its threshold, so polling faster
            // than that only costs wake-ups (about 100 µs of CPU each on a VM).
            var idlePoll = now + max(configuration.checkPeriod, configuration.threshold * 0.9)
            if let scan = nextPoolScan, scan < idlePoll { idlePoll = scan }
            if idlePoll > next { next = idlePoll }
        }
        plannedWake = next
        let own = ownThreadFigures()
        ownAtWait = (own.cpu, own.runQueueWait, MonotonicClock.now())
        metrics?.recordRound(lateness: lateness, watchdogCPU: own.cpu - reportedCPU)
        reportedCPU = own.cpu
        return next
    }

    func shutdown() {
        let now = MonotonicClock.now()
        for m in monitors.values {
            finishStall(m, now: now)
            m.forgetStall()
        }
        monitors.removeAll()
    }

    // MARK: - signal ownership

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

    private func ownThreadFigures() -> (cpu: Duration, runQueueWait: Duration?) {
        let cpu = (try? ThreadCPUClock(ownThread).elapsed()) ?? .zero
        return (cpu, try? ThreadInfo.schedStat(ownThread).waitTime)
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
        let after = ownThreadFigures()
        var waitDelta: Duration?
        if let a = after.runQueueWait, let b = before.runQueueWait { waitDelta = a - b }
        let stopped = suspensionJudge.stoppedTime(lateness: lateInWait, runQueueWait: waitDelta, cpuTime: after.cpu - before.cpu)
        lateness = late - (stopped ?? .zero)
        if let stopped, stopped > .zero {
            logger.info("process was stopped; stopped time is not counted as busy", metadata: [
                "stopped": "\(stopped)", "late": "\(late)"])
        }
        if lateness > configuration.threshold / 10 {
            logger.warning("watchdog woke late", metadata: [
                "late": "\(lateness)", "runQueueWait": "\(waitDelta.map { "\($0)" } ?? "unknown")"])
        }
        return stopped
    }

    // MARK: - one loop

    private func step(_ m: LoopMonitor, now: MonotonicInstant, stoppedFor: Duration?) {
        let busySince = m.source.busySince
        let observation = m.detector.evaluate(busySince: busySince, now: now, previousRoundAt: previousRoundAt,
                                              stoppedFor: stoppedFor)
        let thread = m.source.thread
        switch observation {
        case .idle:
            if !configuration.sampleContinuously { m.forgetStall() }
        case .busy:
            refreshBaseline(m, thread: thread, stamp: busySince, now: now)
            if configuration.sampleContinuously { collect(m, thread: thread) }
        case .suspected:
            refreshBaseline(m, thread: thread, stamp: busySince, now: now)
            collect(m, thread: thread)
        case .stalled(let since, let elapsed):
            refreshBaseline(m, thread: thread, stamp: busySince, now: now)
            collect(m, thread: thread)
            m.stallSince = since
            m.stallThread = thread
            m.stallRound = 1
            considerReport(m, since: since, elapsed: elapsed, now: now)
        case .stillStalled(let since, let elapsed, let round):
            collect(m, thread: thread)
            m.stallRound = round
            considerReport(m, since: since, elapsed: elapsed, now: now)
        case .ended(let duration):
            finishStall(m, duration: duration)
            m.filter.stallEnded()
            m.forgetStall()
        case .resumedAfterSuspension:
            logger.debug("process was stopped; busy stamps re-based", metadata: ["loop": "\(m.source.name)"])
            finishStall(m, now: now)
            m.filter.stallEnded()
            m.forgetStall()
        }
    }

    private func refreshBaseline(_ m: LoopMonitor, thread: ThreadID?, stamp: MonotonicInstant?, now: MonotonicInstant) {
        guard let thread, let stamp else { return }
        if m.baseline?.stamp != stamp || m.baseline?.thread != thread {
            m.baseline = ThreadBaseline.take(thread, stamp: stamp, now: now)
        }
    }

    /// Adds fresh samples: the timer ring's (taken while the thread ran) and, when the thread is
    /// blocked in a system call, one recovered from its kernel-reported SP/PC (never a signal).
    private func collect(_ m: LoopMonitor, thread: ThreadID?) {
        guard let thread else { return }
        if maySignal, m.ring == nil || m.ring?.thread != thread {
            m.stopSampling()
            do {
                m.ring = try SamplingRing(sampler: sampler, thread: thread, interval: samplingIntervalForNewRing(),
                                          clock: .threadCPU, capacity: max(configuration.ringCapacity, 1),
                                          maxFrames: configuration.maxFrames)
            } catch {
                // Once per thread: a loop thread that blocks the signal (or is gone) is still
                // watched and classified, just not sampled while it runs.
                if m.unsampledThread != thread {
                    m.unsampledThread = thread
                    logger.warning("cannot sample loop thread", metadata: [
                        "loop": "\(m.source.name)", "thread": "\(thread.rawValue)", "error": "\(error)"])
                }
            }
        }
        if let ring = m.ring { add(ring.drain(), to: m) }
        if let blocked = try? sampler.captureBlockedStack(of: thread) { add([blocked], to: m) }
    }

    /// Keeps new samples of a loop's thread, counted in the metrics.
    private func add(_ stacks: [CapturedStack], to m: LoopMonitor) {
        guard !stacks.isEmpty else { return }
        metrics?.recordSamples(count: stacks.count, handlerTime: stacks.reduce(.zero) { $0 + $1.handlerTime })
        m.append(stacks, capacity: configuration.ringCapacity)
    }

    // MARK: - reporting

    private func considerReport(_ m: LoopMonitor, since: MonotonicInstant, elapsed: Duration, now: MonotonicInstant) {
        guard let thread = m.stallThread ?? m.source.thread else { return }
        // A stall first reported without any stack is not reported again when samples arrive:
        // its final report, rewritten when it ends, carries them.
        if m.reportedThisStall, m.firstReport?.sampleCount == 0 { return }
        var captureFailure: String?
        if m.samples.isEmpty {
            // Runnable but not running (starved), or not yet sampled: one capture to have a stack.
            // Bounded per round: a starved thread may not get a CPU to answer, and with many loops
            // stalled at once the others' detection would wait for every timeout in turn.
            let remaining = captureBudgetEnd - MonotonicClock.now()
            if maySignal && remaining < .milliseconds(1) {
                captureFailure = "this round's time for captures was spent on other stalled loops"
            } else {
                do {
                    let one = try maySignal ? sampler.captureStack(of: thread, timeout: min(.milliseconds(20), remaining))
                                            : sampler.captureBlockedStack(of: thread)
                    add([one], to: m)
                } catch {
                    captureFailure = signalLost?.description ?? "\(error)"
                }
            }
        }
        let samples = m.samples.map(builder.stackSample)
        let tree = CallTree(samples: samples)
        // A stall is identified by the path most of its samples share; one report per stall: a
        // later round reports again only when that path changed. Recovered leaf callers are left
        // out of the identity: a guess in some samples and not others is not a new stall.
        let stallIdentity = StackSignature(dominantPathOf: CallTree(samples: m.samples.map(builder.identitySample)))
        // A stack too short to leave an identity is still judged (trivial or not) by its frames.
        let signature = stallIdentity.depth > 1 ? stallIdentity : StackSignature(dominantPathOf: tree)
        if m.reportedSignatures.contains(where: { signature.isSameStall(as: $0) }) { return }
        // No stack at all is no reason for silence: the cause and the duration are evidence.
        let decision = m.filter.evaluate(signature, round: m.stallRound, now: now, stackRequired: tree.sampleCount > 0)
        guard case .report(let counters) = decision else {
            if case .filtered(let reason) = decision {
                emit(.filtered(loop: m.source.name, reason: reason))
                logger.debug("stall filtered", metadata: ["loop": "\(m.source.name)", "reason": "\(reason)"])
            }
            return
        }
        let facts = roundFacts(now: now)
        let gathered = StallEvidence.gather(thread: thread, baseline: m.baseline, now: now, threadCount: facts.threads.count)
        var cause = CauseClassifier(configuration: configuration).classify(gathered.evidence)
        if tree.sampleCount == 0 {
            cause.evidence += "; no stack yet (\(captureFailure ?? "no sample")): the final report holds the samples taken later"
        }
        let process = facts.process
        let processCPUPercent: Double = {
            guard let last = lastProcessCPU, let at = lastCPUAt, let cpu = process?.cpuTime, now > at else { return 0 }
            return (cpu - last) / (now - at) * 100
        }()
        let identity = builder.identity(thread, info: gathered.info)
        var report = StallReport(
            kind: .stall,
            id: nextReportID(),
            cause: cause,
            loopName: m.source.name,
            thread: identity,
            startTimeUnixNanoseconds: MonotonicClock.unixNanoseconds(ofMonotonic: since),
            duration: elapsed,
            durationIsFinal: false,
            sequenceInStall: m.reportedThisStall ? m.followUps + 1 : 0,
            sampleCount: tree.sampleCount,
            blamedStack: ReportFrame.blamedStack(of: tree, describe: builder.describe),
            truncatedSampleCount: m.samples.filter(\.truncated).count,
            callTree: ReportCallTreeNode.flatten(tree, describe: builder.describe),
            otherThreads: facts.otherThreads?.filter { $0.thread.id != thread.rawValue },
            threadCount: facts.threads.count,
            threadCPU: [ThreadCPUUsage(thread: identity,
                                       cpuPercent: gathered.evidence.wallDelta > .zero
                                           ? gathered.evidence.cpuTimeDelta / gathered.evidence.wallDelta * 100 : 0)],
            process: process.map { ProcessFacts(cpuPercent: processCPUPercent, residentBytes: $0.residentBytes,
                                                cores: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) },
            numa: facts.numa(gathered.info),
            configuration: configuration,
            counters: counters,
            watchdogLateness: lateness
        )
        if m.ring != nil { report.sampling = SamplingFacts(interval: sampling.interval, reason: sampling.reason) }
        if m.reportedThisStall {
            m.followUps += 1
        } else {
            m.firstReport = report
        }
        m.reportedThisStall = true
        m.reportedSignatures.append(signature)
        deliver(report)
    }

    /// Facts shared by every report of one round, gathered once: with many loops stalled at once,
    /// walking every thread per report would delay the detection of the rest.
    private struct RoundFacts {
        var at: MonotonicInstant
        var threads: [ThreadID]
        var otherThreads: [ThreadStack]?
        var process: ProcessStats?
        var topology: [StallwatchPolicy.NUMANode]

        func numa(_ stalled: ThreadInfo?) -> NUMAFacts {
            NUMAFacts(nodes: topology, stalledThreadNode: stalled?.numaNode)
        }
    }

    private var cachedRoundFacts: RoundFacts?

    private func roundFacts(now: MonotonicInstant) -> RoundFacts {
        if let cached = cachedRoundFacts, cached.at == now { return cached }
        let threads = (try? ThreadList.current()) ?? []
        var others: [ThreadStack]?
        if case .walkAllThreads = ThreadCountPolicy(cutoff: configuration.threadCountCutoff).evaluate(threadCount: threads.count) {
            others = builder.otherThreads(except: [ownThread], threads: threads, maySignal: maySignal,
                                          deadline: MonotonicClock.now() + max(configuration.threshold / 20, .milliseconds(20)))
        }
        let facts = RoundFacts(at: now, threads: threads, otherThreads: others, process: try? ProcessStats.current(),
                               topology: ReportBuilder.numaFacts(stalledThread: nil).nodes)
        cachedRoundFacts = facts
        return facts
    }

    /// Closes a stall: announces its end and rewrites its first report with the final duration and
    /// the call tree of every sample taken during the stall.
    private func finishStall(_ m: LoopMonitor, duration: Duration) {
        guard m.reportedThisStall else { return }
        emit(.stallEnded(loop: m.source.name, thread: m.stallThread, duration: duration))
        logger.info("stall ended", metadata: ["loop": "\(m.source.name)", "duration": "\(duration)"])
        guard var report = m.firstReport else { return }
        let tree = CallTree(samples: m.stallSamples.map(builder.stackSample))
        report.durationNanoseconds = duration.clampedNanoseconds
        report.durationIsFinal = true
        if tree.sampleCount > 0 {
            report.sampleCount = tree.sampleCount
            report.blamedStack = ReportFrame.blamedStack(of: tree, describe: builder.describe)
            report.callTree = ReportCallTreeNode.flatten(tree, describe: builder.describe)
            report.truncatedSampleCount = m.stallSamples.filter(\.truncated).count
        }
        writer?.submit(report)
    }

    /// Closes a stall cut short (the loop was unregistered, the watchdog stopped).
    private func finishStall(_ m: LoopMonitor, now: MonotonicInstant) {
        guard m.reportedThisStall, let since = m.stallSince else { return }
        finishStall(m, duration: now > since ? now - since : .zero)
    }

    private func deliver(_ report: StallReport) {
        writer?.submit(report)
        let top = report.blamedStack.isEmpty ? "?" : report.blamedSummary(frames: 1)
        if report.kind == .stall {
            logger.warning("stall", metadata: [
                "loop": "\(report.loopName ?? "?")", "cause": "\(report.cause?.kind.rawValue ?? "?")",
                "duration": "\(report.duration)", "blamed": "\(top)", "id": "\(report.id)",
            ])
            emit(.stall(report))
        } else {
            logger.warning("high CPU", metadata: ["kind": "\(report.kind.rawValue)", "id": "\(report.id)"])
            emit(.cpu(report))
        }
    }

    // MARK: - CPU policy

    /// Process CPU is judged over whole seconds, whatever the check period (matrix's periods are
    /// seconds long; a 40 ms window after an early wake-up says nothing).
    private func cpuRound(now _: MonotonicInstant) {
        let now = MonotonicClock.now()
        if let at = lastCPUAt, now - at < .seconds(1) { return }
        guard let cpu = try? ProcessCPUClock().elapsed() else { return }
        defer {
            lastProcessCPU = cpu
            lastCPUAt = now
        }
        guard let last = lastProcessCPU, let at = lastCPUAt else { return }
        let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        let wall = now - at
        let processDelta = cpu - last
        // Per-thread figures only when the process is busy enough for them to matter.
        var threads: [ThreadCPUTime] = []
        if wall > .zero, processDelta / wall > configuration.cpu.processHighFraction * Double(cores) * 0.9 {
            threads = threadCPUDeltas()
        }
        let assessment = cpuPolicy.ingest(CPUReading(processCPUTimeDelta: processDelta, wallDelta: wall,
                                                     cores: cores, threads: threads))
        for event in assessment.events {
            let id = nextReportID()
            let report: StallReport
            switch event {
            case .processCPUHigh(let usage, let top):
                report = StallReport(
                    kind: .cpuHigh, id: id,
                    cause: StallCause(kind: .cpuUsage, evidence: "process CPU \(Int(usage * 100)) % of one core on \(cores) cores"),
                    startTimeUnixNanoseconds: MonotonicClock.unixNanoseconds(ofMonotonic: at),
                    duration: wall, durationIsFinal: true, threadCount: (try? ThreadList.count()) ?? 0,
                    threadCPU: top.map { ThreadCPUUsage(thread: ThreadIdentity(id: $0.threadID, name: $0.name),
                                                        cpuPercent: $0.fraction * 100) },
                    configuration: configuration)
            case .sustainedHigh(let average, let duration):
                report = StallReport(
                    kind: .cpuSustained, id: id,
                    cause: StallCause(kind: .cpuUsage, evidence: "process CPU averaged \(Int(average * 100)) % of one core for \(duration)"),
                    startTimeUnixNanoseconds: MonotonicClock.unixNanoseconds(ofMonotonic: MonotonicInstant(nanoseconds: now.nanoseconds &- UInt64(max(duration.clampedNanoseconds, 0)))),
                    duration: duration, durationIsFinal: true, threadCount: (try? ThreadList.count()) ?? 0,
                    configuration: configuration)
            }
            deliver(report)
        }
    }

    private func threadCPUDeltas() -> [ThreadCPUTime] {
        guard let tids = try? ThreadList.current() else { return [] }
        var current: [Int32: Duration] = [:]
        var out: [ThreadCPUTime] = []
        for tid in tids {
            guard let cpu = try? ThreadCPUClock(tid).elapsed() else { continue }
            current[tid.rawValue] = cpu
            if let before = lastThreadCPU[tid.rawValue] {
                let name = (try? ThreadInfo.read(tid).name) ?? ""
                out.append(ThreadCPUTime(threadID: tid.rawValue, name: name, cpuTimeDelta: cpu - before))
            }
        }
        lastThreadCPU = current
        return out
    }
}
