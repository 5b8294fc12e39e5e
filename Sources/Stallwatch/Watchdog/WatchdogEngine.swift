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
    let store: ReportStore?
    let logger: Logger
    let emit: (WatchdogEvent) -> Void
    private var monitors: [ObjectIdentifier: LoopMonitor] = [:]
    private var previousRoundAt: MonotonicInstant?
    private var cpuPolicy: CPUPolicy
    private var lastProcessCPU: Duration?
    private var lastCPUAt: MonotonicInstant?
    private var lastThreadCPU: [Int32: Duration] = [:]
    private var reportCounter = 0
    let ownThread = ThreadID.current

    init(configuration: WatchdogConfiguration, sampler: StackSampler, store: ReportStore?, logger: Logger,
         emit: @escaping (WatchdogEvent) -> Void) {
        self.configuration = configuration
        self.sampler = sampler
        self.builder = ReportBuilder(configuration: configuration, symbolizer: .shared, sampler: sampler)
        self.store = store
        self.logger = logger
        self.emit = emit
        self.cpuPolicy = CPUPolicy(settings: configuration.cpu)
    }

    /// Brings the monitor set in line with the registered loops.
    func sync(_ sources: [LoopSource]) {
        let ids = Set(sources.map(\.identity))
        for (id, m) in monitors where !ids.contains(id) {
            m.forgetStall()
            monitors[id] = nil
        }
        for s in sources where monitors[s.identity] == nil {
            monitors[s.identity] = LoopMonitor(source: s, configuration: configuration)
        }
    }

    /// Runs one round. Returns when the next round should run.
    func round() -> MonotonicInstant {
        let now = MonotonicClock.now()
        var next = now + configuration.checkPeriod
        var anyActive = false
        for m in monitors.values {
            if case .ping(let p) = m.source { p.pingIfIdle() }
            step(m, now: now)
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
        cpuRound(now: now)
        previousRoundAt = now
        if !anyActive {
            // Nothing is busy: a loop that turns busy right after this round is seen by the next one
            // within 0.9 × threshold, and then woken for exactly at its threshold, so polling faster
            // than that only costs wake-ups (about 100 µs of CPU each on a VM).
            let idlePoll = now + max(configuration.checkPeriod, configuration.threshold * 0.9)
            if idlePoll > next { next = idlePoll }
        }
        return next
    }

    func shutdown() {
        for m in monitors.values { m.forgetStall() }
        monitors.removeAll()
    }

    // MARK: - one loop

    private func step(_ m: LoopMonitor, now: MonotonicInstant) {
        let busySince = m.source.busySince
        let observation = m.detector.evaluate(busySince: busySince, now: now, previousRoundAt: previousRoundAt)
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
            if m.reportedThisStall {
                emit(.stallEnded(loop: m.source.name, thread: m.stallThread, duration: duration))
                logger.info("stall ended", metadata: ["loop": "\(m.source.name)", "duration": "\(duration)"])
            }
            m.filter.stallEnded()
            m.forgetStall()
        case .resumedAfterSuspension:
            logger.debug("process was stopped; busy stamps re-based", metadata: ["loop": "\(m.source.name)"])
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
        if m.ring == nil || m.ring?.thread != thread {
            m.stopSampling()
            do {
                m.ring = try SamplingRing(sampler: sampler, thread: thread, interval: configuration.sampleInterval,
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
        if let ring = m.ring { m.append(ring.drain(), capacity: configuration.ringCapacity) }
        if let blocked = try? sampler.captureBlockedStack(of: thread) {
            m.append([blocked], capacity: configuration.ringCapacity)
        }
    }

    // MARK: - reporting

    private func considerReport(_ m: LoopMonitor, since: MonotonicInstant, elapsed: Duration, now: MonotonicInstant) {
        guard let thread = m.stallThread ?? m.source.thread else { return }
        if m.samples.isEmpty, let one = try? sampler.captureStack(of: thread) {
            // Runnable but not running (starved), or not yet sampled: one capture to have a stack.
            m.append([one], capacity: configuration.ringCapacity)
        }
        let samples = m.samples.map(builder.stackSample)
        let tree = CallTree(samples: samples)
        // A stall is identified by the path most of its samples share; one report per stall: a
        // later round reports again only when that path changed.
        let signature = StackSignature(dominantPathOf: tree)
        if m.reportedSignatures.contains(where: { signature.isSameStall(as: $0) }) { return }
        let decision = m.filter.evaluate(signature, round: m.stallRound, now: now)
        guard case .report(let counters) = decision else {
            if case .filtered(let reason) = decision {
                emit(.filtered(loop: m.source.name, reason: reason))
                logger.debug("stall filtered", metadata: ["loop": "\(m.source.name)", "reason": "\(reason)"])
            }
            return
        }
        let threads = (try? ThreadList.current()) ?? []
        let cutoff = ThreadCountPolicy(cutoff: configuration.threadCountCutoff).evaluate(threadCount: threads.count)
        let gathered = StallEvidence.gather(thread: thread, baseline: m.baseline, now: now, threadCount: threads.count)
        let cause = CauseClassifier(configuration: configuration).classify(gathered.evidence)
        var others: [ThreadStack]?
        if case .walkAllThreads = cutoff {
            others = builder.otherThreads(except: [thread, ownThread], threads: threads)
        }
        let process = try? ProcessStats.current()
        let processCPUPercent: Double = {
            guard let last = lastProcessCPU, let at = lastCPUAt, let cpu = process?.cpuTime, now > at else { return 0 }
            return (cpu - last) / (now - at) * 100
        }()
        reportCounter += 1
        let report = StallReport(
            kind: .stall,
            id: "\(getpid())-\(reportCounter)",
            cause: cause,
            loopName: m.source.name,
            thread: builder.identity(thread, info: gathered.info),
            startTimeUnixNanoseconds: MonotonicClock.unixNanoseconds(ofMonotonic: since),
            duration: elapsed,
            durationIsFinal: false,
            sequenceInStall: m.reportedThisStall ? m.followUps + 1 : 0,
            sampleCount: tree.sampleCount,
            blamedStack: ReportFrame.blamedStack(of: tree, describe: builder.describe),
            callTree: ReportCallTreeNode.forest(of: tree, describe: builder.describe),
            otherThreads: others,
            threadCount: threads.count,
            threadCPU: [ThreadCPUUsage(thread: builder.identity(thread, info: gathered.info),
                                       cpuPercent: gathered.evidence.wallDelta > .zero
                                           ? gathered.evidence.cpuTimeDelta / gathered.evidence.wallDelta * 100 : 0)],
            process: process.map { ProcessFacts(cpuPercent: processCPUPercent, residentBytes: $0.residentBytes,
                                                cores: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) },
            numa: ReportBuilder.numaFacts(stalledThread: gathered.info),
            configuration: configuration,
            counters: counters
        )
        if m.reportedThisStall { m.followUps += 1 }
        m.reportedThisStall = true
        m.reportedSignatures.append(signature)
        deliver(report)
    }

    private func deliver(_ report: StallReport) {
        if let store {
            do {
                _ = try store.write(report)
            } catch {
                logger.error("cannot write stall report", metadata: ["error": "\(error)"])
                emit(.error("cannot write stall report \(report.id): \(error)"))
            }
        }
        let top = report.blamedStack.first?.symbol ?? report.blamedStack.first.map { "\($0.address)" } ?? "?"
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
            reportCounter += 1
            let report: StallReport
            switch event {
            case .processCPUHigh(let usage, let top):
                report = StallReport(
                    kind: .cpuHigh, id: "\(getpid())-\(reportCounter)",
                    cause: StallCause(kind: .cpuUsage, evidence: "process CPU \(Int(usage * 100)) % of one core on \(cores) cores"),
                    startTimeUnixNanoseconds: MonotonicClock.unixNanoseconds(ofMonotonic: at),
                    duration: wall, durationIsFinal: true, threadCount: (try? ThreadList.count()) ?? 0,
                    threadCPU: top.map { ThreadCPUUsage(thread: ThreadIdentity(id: $0.threadID, name: $0.name),
                                                        cpuPercent: $0.fraction * 100) },
                    configuration: configuration)
            case .sustainedHigh(let average, let duration):
                report = StallReport(
                    kind: .cpuSustained, id: "\(getpid())-\(reportCounter)",
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
