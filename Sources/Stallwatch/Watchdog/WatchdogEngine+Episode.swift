import CSampler
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import StallwatchPolicy
import StallwatchReport
import Tracing

/// One loop per round: the detector's verdict, sampling, evidence, and the one report of each stall
/// episode. The detector owns the episode (its start, rounds, deadlines and report); this gathers
/// what the report needs and hands it to the ``ReportBuilder``.
extension WatchdogEngine {
    /// How long a stall's end waits for the loop's report of the tick that ended it.
    static let tickWait = Duration.milliseconds(100)
    /// A new ring's first sample comes after this much of the thread's CPU time (see
    /// ``SamplingRing/sampleFirst(after:)``), the next ones every sampling interval.
    static let firstSampleAfter = Duration.milliseconds(1)

    /// Returns `false` while a stall's end waits for the loop's tick report: no new ping then, or
    /// it would stand for the stalled period.
    @discardableResult
    func step(_ m: LoopMonitor, now: MonotonicInstant, stoppedFor: Duration?) -> Bool {
        let busySince = m.source.busySince
        var endedAt = m.detector.watchedStamp.flatMap { m.source.end(ofPeriodSince: $0) }
        if busySince == nil, m.inStall, let ticks = m.pinged?.ticks, let posted = m.detector.watchedStamp,
           let answered = endedAt {
            // The tick that ran the ping is reported right after it ends: wait a little for it
            // rather than close the stall with the ping's view of it.
            if ticks.awaitsTick(after: answered), now - answered < Self.tickWait { return false }
            if let bounds = ticks.tickBounds(posted: posted, answered: answered) {
                // The loop said when its stalled tick began and ended: better than the ping's view.
                if let start = bounds.start { m.detector.correctStart(to: start) }
                endedAt = bounds.end
            }
        }
        let observation = m.detector.evaluate(busySince: busySince, now: now, previousRoundAt: previousRound,
                                              stoppedFor: stoppedFor, endedAt: endedAt,
                                              lastEnded: m.ownsBusyRecord ? m.lastEndedPeriod : nil)
        if let busySince, let pinged = m.pinged {
            m.detector.refineStart(ofPeriodSince: busySince,
                                   to: pinged.estimatedStart(posted: busySince, pingPeriod: schedule.pingPeriod))
        }
        let thread = m.source.thread
        switch observation {
        case .idle:
            m.forgetBusyPeriod(keepRing: configuration.sampleContinuously)
        case .busy:
            refreshBaseline(m, thread: thread, stamp: busySince, now: now)
            if configuration.sampleContinuously { collect(m, thread: thread, now: now) }
        case .suspected:
            refreshBaseline(m, thread: thread, stamp: busySince, now: now)
            m.baseline?.readOnceSuspected()
            collect(m, thread: thread, now: now)
            if evidenceDue(m, now: now) { noteEvidence(m, thread: thread, stamp: busySince) }
        case .stalled(let since, let elapsed):
            refreshBaseline(m, thread: thread, stamp: busySince, now: now)
            // Not suspected first when the round came late: later evidence still has a baseline.
            m.baseline?.readOnceSuspected()
            collect(m, thread: thread, now: now, fresh: true)
            // The first report's evidence is read now, however recent the last.
            noteEvidence(m, thread: thread, stamp: busySince)
            report(m, thread: thread, stamp: busySince, start: since, elapsed: elapsed, now: now)
        case .stillStalled(let since, let elapsed, _):
            refreshBaseline(m, thread: thread, stamp: busySince, now: now)
            collect(m, thread: thread, now: now)
            if evidenceDue(m, now: now) { noteEvidence(m, thread: thread, stamp: busySince) }
            report(m, thread: thread, stamp: busySince, start: since, elapsed: elapsed, now: now)
        case .stalledAfterItEnded(let since, let duration):
            // Seen only after it ended: no sampling now (the thread moved on), one report with what
            // was gathered while it ran, made final at once. The loop's next period is watched again.
            report(m, thread: thread, stamp: nil, start: since, elapsed: duration, now: now,
                   seenLate: now - (since + configuration.threshold))
            if let (episode, duration) = m.detector.closeStallThatEnded(busySince: busySince) {
                finish(m, episode, duration: duration)
            }
            m.filter.stallEnded()
            m.forgetBusyPeriod(keepRing: false)
        case .ended(let duration):
            if let episode = m.detector.takeEndedEpisode() { finish(m, episode, duration: duration) }
            m.filter.stallEnded()
            m.forgetBusyPeriod(keepRing: false)
        case .resumedAfterSuspension:
            logger.debug("process was stopped; busy stamps re-based", metadata: ["loop": "\(m.source.name)"])
            if let episode = m.detector.takeEndedEpisode() {
                finish(m, episode, duration: episode.duration(endingAt: previousRound ?? now))
            }
            m.filter.stallEnded()
            m.forgetBusyPeriod(keepRing: false)
        }
        return true
    }

    /// Closes a stall cut short (the loop was unregistered, the watchdog stopped).
    func cutShort(_ m: LoopMonitor, now: MonotonicInstant) {
        if let (episode, duration) = m.detector.cutShort(at: now) { finish(m, episode, duration: duration) }
        finishBusyLoopReport(m, at: now)
        if case .heartbeat(let probe) = m.source { finishFeedbackReports(of: probe, in: m, now: now, cutShort: true) }
        m.forgetBusyPeriod(keepRing: false)
    }

    private func refreshBaseline(_ m: LoopMonitor, thread: ThreadID?, stamp: MonotonicInstant?, now: MonotonicInstant) {
        guard let thread, let stamp else { return }
        if m.baseline?.stamp != stamp || m.baseline?.thread != thread {
            m.baseline = ThreadBaseline.take(thread, files: m.taskFiles.flatMap { $0.tid == thread ? $0 : nil },
                                             stamp: stamp, now: now)
        }
    }

    /// Adds fresh samples: the timer ring's (taken while the thread ran) and, when the thread is
    /// blocked in a system call, one recovered from its kernel-reported SP/PC (never a signal) —
    /// at most once per sampling interval, or now when `fresh` (the stall's first report). With
    /// many loops stalled at once the watchdog runs a round every few ms, and reading every
    /// loop's `syscall` file in each was most of a round's work while the first reports waited.
    private func collect(_ m: LoopMonitor, thread: ThreadID?, now: MonotonicInstant, fresh: Bool = false) {
        guard let thread else { return }
        if maySignal, m.ring == nil || m.ring?.thread != thread {
            m.stopSampling()
            do {
                m.ring = try SamplingRing(sampler: sampler, thread: thread, interval: samplingIntervalForNewRing(),
                                          clock: .threadCPU, capacity: max(configuration.ringCapacity, 1),
                                          maxFrames: configuration.maxFrames)
                if m.ring?.sampleFirst(after: Self.firstSampleAfter) == true, let cpu = try? ThreadCPUClock(thread).elapsed() {
                    m.firstSampleArmed = (MonotonicClock.now(), cpu)
                }
                if let reason = m.ring?.fallbackReason, !perfRefusalLogged {
                    perfRefusalLogged = true
                    logger.warning("signal-free sampling refused by the kernel; the timer ring's signal samples instead", metadata: [
                        "loop": "\(m.source.name)", "thread": "\(thread.rawValue)", "reason": "\(reason)"])
                }
            } catch {
                // Once per thread: a loop thread that blocks the signal (or is gone) is still
                // watched and classified, just not sampled while it runs.
                if m.unsampledThread != thread {
                    m.unsampledThread = thread
                    logger.warning("cannot sample loop thread", metadata: [
                        "loop": "\(m.source.name)", "thread": "\(thread.rawValue)", "error": "\(error)"])
                    emit(.error("cannot sample \(m.source.name)'s thread \(thread.rawValue) while it runs: \(error)"))
                }
            }
        }
        if let ring = m.ring {
            // Each sample is copied straight from the ring into storage a forgotten sample left.
            var count = 0
            var handlerTime = Duration.zero
            ring.drain { raw in
                let stack = CapturedStack(raw, reusing: m.takeFrameStorage())
                count += 1
                handlerTime += stack.handlerTime
                m.append(stack)
            }
            if count > 0 { metrics?.recordSamples(count: count, handlerTime: handlerTime) }
        }
        guard fresh || m.blockedReadAt.map({ now - $0 >= configuration.sampleInterval }) ?? true else { return }
        m.blockedReadAt = now
        // Asked mostly of a running thread (no stack): no storage is handed over for it. Through
        // the loop's `syscall` descriptor, kept open from the first time a busy period gets here.
        if let blocked = try? sampler.captureBlockedStack(m.files(of: thread)) {
            metrics?.recordSamples(count: 1, handlerTime: blocked.handlerTime)
            m.append(blocked)
        }
    }

    /// Keeps new samples of a loop's thread, counted in the metrics.
    private func add(_ stacks: [CapturedStack], to m: LoopMonitor) {
        guard !stacks.isEmpty else { return }
        metrics?.recordSamples(count: stacks.count, handlerTime: stacks.reduce(.zero) { $0 + $1.handlerTime })
        m.append(stacks)
    }

    /// Reads the thread's state, CPU and run-queue wait, and keeps them only if the busy period was
    /// still running once they were read: a stall's cause comes from the stall, never from what its
    /// thread did after it (a pool thread back in its idle futex read as `lockWait`).
    /// Whether `m`'s thread is due to be read for evidence again (``DetectionSchedule/evidencePeriod``).
    private func evidenceDue(_ m: LoopMonitor, now: MonotonicInstant) -> Bool {
        m.evidenceAt.map { now - $0 >= schedule.evidencePeriod } ?? true
    }

    private func noteEvidence(_ m: LoopMonitor, thread: ThreadID?, stamp: MonotonicInstant?) {
        guard let thread, let stamp else { return }
        m.evidenceAt = roundStart
        let round = roundStart
        let gathered = StallEvidence.gather(files: m.files(of: thread), baseline: m.baseline, now: MonotonicClock.now(),
                                            threadCount: census.threadCount(round: round),
                                            runnableThreads: { census.runnableThreads(round: round) })
        guard stillRunning(m, thread: thread, stamp: stamp, blockedIn: gathered.evidence.syscall) else { return }
        // Torn twice: the thread is waking (its stall ending); what an earlier round read of it stands.
        if gathered.info?.isTorn == true, m.evidence != nil { return }
        m.evidence = gathered
    }

    /// Whether the busy period stamped `stamp` still runs on `thread`. For a pool thread blocked
    /// in a system call, its stack must still be inside a job: the watcher's view is a scan old.
    private func stillRunning(_ m: LoopMonitor, thread: ThreadID, stamp: MonotonicInstant, blockedIn syscall: Int?) -> Bool {
        guard m.source.busySince == stamp, m.source.thread == thread else { return false }
        guard let accepts = m.accepts, syscall != nil else { return true }
        guard let stack = try? sampler.captureBlockedStack(of: thread) else { return false }
        return accepts(stack)
    }

    private func cause(of m: LoopMonitor) -> StallCause? {
        m.evidence.map { CauseClassifier(configuration: configuration).classify($0.evidence, observed: m.observedStates) }
    }

    // MARK: - the episode's one report

    /// The first report of an episode, or an update of it (same id) when its blamed path changed.
    /// `seenLate`: for a stall first seen after it ended, how long after its threshold that was.
    private func report(_ m: LoopMonitor, thread: ThreadID?, stamp: MonotonicInstant?,
                        start: MonotonicInstant, elapsed: Duration, now: MonotonicInstant,
                        seenLate: Duration? = nil) {
        if let existing = m.detector.episode?.report {
            update(m, existing, start: start, elapsed: elapsed)
            return
        }
        // A pinged loop stalled before any ping ran on it (right after it was monitored) has no
        // known thread: still reported, with what is known (its loop, start and duration).
        var captureFailure: String?
        if m.samples.isEmpty, let thread {
            // A stall already over has nothing left to capture: the thread runs other work now.
            captureFailure = seenLate != nil ? "the stall had ended"
                : waitingForCPU(m, thread: thread, stamp: stamp, now: now) ?? captureOnce(m, thread: thread, stamp: stamp)
        }
        // A sample counts in a call tree when it has a frame.
        let sampleCount = m.samples.count { !$0.frames.isEmpty }
        let signature = signature(of: m)
        // No stack at all is no reason for silence: the cause and the duration are evidence.
        let stackRequired = sampleCount > 0
        // A deadlock is reported once, by the first of its threads to be reported.
        let lockFinding = lockWaitFinding(m, thread: thread)
        if deadlockReported(lockFinding, thread: thread, stamp: stamp, now: now) { return }
        // The filter judges an episode, not a round: rounds come every 40 ms, and each call counts
        // a filtered or rate-limited report. A stall cut by the rate cap stays cut; one filtered
        // for its (trivial) stack is judged again only once its stack says more.
        switch m.filtered?.kind {
        case .rateLimited?: return
        case .trivialStack? where signature.depth <= 1 && stackRequired: return
        default: break
        }
        // Annealing counts check periods since the threshold, whatever the round rate.
        let periods = Int(((elapsed - configuration.threshold) / configuration.checkPeriod).rounded(.down)) + 1
        let decision = m.filter.evaluate(signature, round: max(periods, 1), now: now, stackRequired: stackRequired,
                                         stackWhole: m.samples.allSatisfy(\.isWhole))
        guard case .report(let counters) = decision else {
            if case .filtered(let reason) = decision {
                if m.filtered?.kind != reason.kind {
                    emit(.filtered(loop: m.source.name, reason: reason))
                    logger.debug("stall filtered", metadata: ["loop": "\(m.source.name)", "reason": "\(reason)"])
                }
                m.filtered = reason
            }
            return
        }
        var cause = cause(of: m) ?? StallCause(kind: .unknown, evidence: thread == nil ? Self.unknownThread : Self.stateUnread)
        if let seenLate {
            // A heartbeat's period ends unseen when the watchdog ran late; a tick's when a look
            // saw the loop busy only well after it began (a resting loop's wake went unseen).
            let why = m.reportsTicks ? "the loop's tick told its bounds" : "the watchdog ran late"
            cause.evidence += "; seen only after it ended, \(seenLate) past its threshold: \(why)"
        } else if sampleCount == 0, thread != nil {
            m.noStackReason = captureFailure ?? "no sample"
            cause.evidence += "; no stack yet (\(captureFailure ?? "no sample")): the final report holds the samples taken later"
        }
        let lock = lockFinding.flatMap { lockWaitFacts($0, cause: &cause) }
        let facts = roundFacts(now: now)
        var report = builder.stallReport(
            id: nextReportID(),
            ReportBuilder.StallFacts(
                loopName: m.source.name, thread: thread,
                threadName: thread.map { gatherer.threadName($0, known: m.evidence?.info?.name) } ?? "",
                start: start, elapsed: elapsed, cause: cause,
                evidence: m.evidence, round: facts, processCPUPercent: processCPUPercent(facts, now: now),
                counters: counters, lateness: seenLate.map { max($0, lateness) } ?? lateness,
                sampling: m.ring.map { ring in
                    var facts = SamplingFacts(interval: sampling.interval, reason: sampling.reason)
                    facts.driver = ring.driver.name
                    facts.driverFallback = ring.fallbackReason
                    return facts
                }, lockWait: lock),
            samples: m.samples)
        if let lock, let finding = lockFinding { noteDeadlock(finding, lock, reportID: report.id, now: now) }
        if let pinged = m.pinged { report.poolJobs = poolJobStacks(for: pinged) }
        m.detector.record(report: report)
        m.reportedSignature = signature
        deliver(report, request: StallAttribution.context(of: report, samples: m.samples))
        StallAttribution.reported(report, samples: m.samples)
    }

    /// Rewrites the episode's report when what it blames changed, or when it had no stack and now
    /// has one: the same id, a higher ``StallReport/sequenceInStall``, no new event.
    private func update(_ m: LoopMonitor, _ existing: StallReport, start: MonotonicInstant, elapsed: Duration) {
        guard !m.samples.isEmpty else { return }
        // No sample since the signature was last computed: the same stall, nothing to update (and
        // no call tree built on every round while a loop stays stalled).
        if existing.sampleCount > 0, m.signatureAt == m.samplesAdded, m.reportedSignature != nil { return }
        m.signatureAt = m.samplesAdded
        let signature = signature(of: m)
        if existing.sampleCount > 0, let last = m.reportedSignature, signature.isSameStall(as: last) { return }
        let next = builder.updated(existing, start: start, duration: elapsed, final: false, samples: m.samples,
                                   cause: cause(of: m))
        m.detector.record(report: next)
        m.reportedSignature = signature
        writer?.submit(next)
        StallAttribution.reported(next, samples: m.samples)
        logger.debug("stall report updated", metadata: ["loop": "\(m.source.name)", "id": "\(next.id)"])
    }

    /// A stall is identified by the path most of its newest samples share. Recovered leaf callers
    /// are left out: a guess in some samples and not others is not another stall.
    private func signature(of m: LoopMonitor) -> StackSignature {
        let recent = m.recentSamples(configuration.ringCapacity)
        let scratch = builder.scratch
        builder.buildTree(of: recent, identity: true)
        scratch.tree.dominantPath(into: &scratch.path)
        // A stack too short to leave an identity is still judged (trivial or not) by its frames.
        if scratch.path.count <= 1 {
            builder.buildTree(of: recent)
            scratch.tree.dominantPath(into: &scratch.path)
        }
        return StackSignature(rootFirst: scratch.path)
    }

    /// Why a stall has no cause when its thread's `/proc` files could not be read while it lasted.
    static let stateUnread = "the thread's state could not be read while the stall lasted"

    /// Why a stall has no stack and no cause when its loop's thread is not known.
    static let unknownThread = "the loop's thread is not known: no ping had run on it since it was monitored"

    /// Why a one-off capture is not worth waiting for: the thread is runnable and has had under
    /// ``waitingForCPUShare`` of a CPU since its ring was armed, during this busy period, at least
    /// ``waitForCPUAfter`` ago — it waits for a CPU. A signal would be answered only when it next
    /// gets one; waiting here (up to 20 ms a loop, 25 a round) delays this report and every other
    /// stalled loop's in the round: 64 spinning loops on 2 cores by 30-40 ms at p99. Its
    /// ring has no sample although it may have run a few ms: a CPU-clock timer expires only at a
    /// scheduler tick that finds the thread running (64 spinning loops: 1.9-10.3 ms of CPU in the
    /// 125-258 ms since arming, no sample). The report says so; its update carries the ring's stack.
    /// nil: capture as usual.
    private func waitingForCPU(_ m: LoopMonitor, thread: ThreadID, stamp: MonotonicInstant?, now: MonotonicInstant) -> String? {
        guard let armed = m.firstSampleArmed, let stamp, armed.at >= stamp, now - armed.at >= Self.waitForCPUAfter,
              let evidence = m.evidence?.evidence, evidence.state == "R",
              let cpu = try? ThreadCPUClock(thread).elapsed() else { return nil }
        let wall = now - armed.at, onCPU = cpu - armed.cpu
        guard onCPU < wall * Self.waitingForCPUShare else { return nil }
        // Not the run-queue wait: schedstat counts a wait only once it ends, and this one has not.
        return "the thread waits for a CPU: runnable, and on one \(DurationText.milliseconds(onCPU)) of the "
            + "\(DurationText.milliseconds(wall)) since its sampling ring started; a signal would be answered only when it next "
            + "gets one, so the report did not wait: the ring takes the stack while it runs, and an update of this report carries it"
    }

    /// How long a ring armed for a fast first sample must have run before its thread's share of a
    /// CPU since then is judged.
    static let waitForCPUAfter = Duration.milliseconds(10)
    /// The share of a CPU under which a runnable thread is taken as waiting for one.
    static let waitingForCPUShare = 0.1

    /// One capture of a stalled thread with no sample yet (runnable but not running, or not yet
    /// sampled), kept only if the stall still runs. Bounded per round: a starved thread may not get
    /// a CPU to answer, and with many loops stalled at once the others' detection would wait for
    /// every timeout in turn. A signal not handled in time is followed by the kernel's sample (a
    /// thread inside one long system call answers no signal), which may take the round up to 20 ms
    /// past the budget, once per such stall. Returns why there is no capture, if there is none.
    private func captureOnce(_ m: LoopMonitor, thread: ThreadID, stamp: MonotonicInstant?) -> String? {
        let remaining = captureBudget.remaining(at: MonotonicClock.now())
        if maySignal && remaining < .milliseconds(1) {
            return captureBudget.exhaustedReason(for: m.source.identity)
        }
        do {
            let one = try maySignal ? sampler.captureStack(of: thread, timeout: min(.milliseconds(20), remaining))
                                    : sampler.captureBlockedStack(of: thread)
            if maySignal { captureBudget.spend(by: m.source.identity, name: m.source.name) }
            guard let stamp, m.source.busySince == stamp else { return "the stall ended while its stack was taken" }
            add([one], to: m)
            return nil
        } catch {
            if maySignal { captureBudget.spend(by: m.source.identity, name: m.source.name) }
            return signalLost?.description ?? "\(error)"
        }
    }

    /// Closes an episode: announces its end and makes its report final — the exact duration, the
    /// call tree of every sample taken during the stall, and the cause from the newest evidence
    /// read while it lasted.
    private func finish(_ m: LoopMonitor, _ episode: StallEpisode, duration: Duration) {
        guard let report = episode.report else { return }
        emit(.stallEnded(loop: m.source.name, thread: report.thread.map { ThreadID(rawValue: $0.id) }, duration: duration))
        var cause = cause(of: m)
        // Still no stack at the end: the final report says why, as the first one did (whose "the
        // final report holds the samples" would stand otherwise).
        if let reason = m.noStackReason, !m.samples.contains(where: { !$0.frames.isEmpty }) {
            var said = cause ?? StallCause(kind: .unknown, evidence: Self.stateUnread)
            said.evidence += "; no stack (\(reason)), and no sample was taken before the stall ended"
            cause = said
        }
        let inside = CapturedStack.taken(m.samples, until: episode.start + duration)
        let kept = inside.count
        var final = builder.updated(report, start: episode.start, duration: duration, final: true, samples: inside,
                                    cause: cause)
        m.lastFinishedReport = (final.id, final.startTimeUnixNanoseconds)
        if final.poolJobs != nil { linkPoolJobReports(&final) }
        var facts = final.sampling ?? SamplingFacts(interval: sampling.interval, reason: sampling.reason)
        if let why = FewSamples.reason(kept: kept, dropped: m.samples.count - kept, cause: final.cause?.kind,
                                       duration: duration, interval: .nanoseconds(facts.intervalNanoseconds)) {
            facts.fewSamplesReason = why
            final.sampling = facts
        }
        writer?.submit(final)
        // The end's record carries the final facts (duration, cause, stack) of the report on disk.
        logger.log(StallLogRecord(report: final, ended: true, context: StallAttribution.context(of: final, samples: m.samples)))
        StallAttribution.reported(final, samples: m.samples)
        onFinalReport?(final)
    }

    /// The newest sample of a watched loop whose thread is `tid` and which is stalled itself: busy
    /// since before the sample was taken, still busy, and the sample younger than the threshold
    /// (see ``ThreadStack/stackAgeNanoseconds``). Only timed samples of the busy period qualify; a
    /// linear search, as the walk is one per round and allocates nothing.
    private func stalledSample(of tid: ThreadID) -> CapturedStack? {
        let now = MonotonicClock.now()
        for m in monitors.values where m.source.thread == tid {
            guard let since = m.source.busySince, let last = m.samples.last, last.thread == tid,
                  let taken = last.takenAtNanoseconds.map(MonotonicInstant.init(nanoseconds:)),
                  taken >= since, now - taken <= configuration.threshold else { continue }
            return last
        }
        return nil
    }

    private func processCPUPercent(_ facts: RoundFacts, now: MonotonicInstant) -> Double {
        guard let last = lastProcessCPU, let at = lastCPUAt, let cpu = facts.process?.cpuTime, now > at else { return 0 }
        return (cpu - last) / (now - at) * 100
    }

    private func roundFacts(now: MonotonicInstant) -> RoundFacts {
        if let cached = cachedRoundFacts, cached.at == now { return cached }
        // Listed into storage kept from report to report (empty when the listing fails).
        do { try ThreadList.current(into: &roundThreads) } catch { roundThreads.removeAll(keepingCapacity: true) }
        var others: [ThreadStack]?
        if case .walkAllThreads = ThreadCountPolicy(cutoff: configuration.threadCountCutoff).evaluate(threadCount: roundThreads.count) {
            others = gatherer.otherThreads(except: ownThread, threads: roundThreads, maySignal: maySignal,
                                          deadline: MonotonicClock.now() + schedule.captureTime,
                                          stalledSample: { stalledSample(of: $0) })
        }
        let facts = RoundFacts(at: now, threadCount: roundThreads.count, otherThreads: others, process: try? ProcessStats.current(),
                               topology: ReportFactsGatherer.numaFacts(stalledThread: nil).nodes)
        cachedRoundFacts = facts
        return facts
    }

    /// Hands a new report to the writer, the event sinks and the log; `request` is the context of
    /// the request it stalled, for its log record.
    func deliver(_ report: StallReport, request: ServiceContext? = nil) {
        writer?.submit(report)
        if report.kind == .stall {
            // The event first: a log line written to a slow stream must not delay it.
            emit(.stall(report))
            // Made and written on the log queue, in the request's context (StallLogRecord).
            logger.log(StallLogRecord(report: report, ended: false, context: request))
        } else {
            logger.warning("high CPU", metadata: ["kind": "\(report.kind.rawValue)", "id": "\(report.id)"])
            emit(.cpu(report))
        }
    }
}
