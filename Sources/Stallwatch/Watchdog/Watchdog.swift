import CSampler
import Dispatch
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
import Synchronization

/// Watches loops that must stay responsive and reports, once per stall, why each stall happened and
/// which code caused it.
///
/// The watchdog runs on a thread of its own (never on a pool or loop it watches), wakes once per
/// check period — or exactly when a busy loop is due to cross the threshold — and samples a loop's
/// thread only while it is suspected of stalling, with a timer on that thread's CPU clock (no
/// sampler thread; a thread blocked in a system call is never signalled).
///
/// ```swift
/// let watchdog = try Watchdog(configuration: .init(threshold: .milliseconds(500)),
///                             reportDirectory: "/var/lib/myservice/stalls")
/// let probe = watchdog.makeProbe(name: "request-loop")
/// try watchdog.start()
/// // in the loop: probe.busy() ... probe.idle()
/// for await event in watchdog.events { ... }
/// ```
public final class Watchdog: Sendable {
    /// The validated configuration.
    public let configuration: WatchdogConfiguration
    /// Every event, in order. A single consumer; events beyond 1 000 unread are dropped oldest first.
    public let events: AsyncStream<WatchdogEvent>

    private let continuation: AsyncStream<WatchdogEvent>.Continuation
    private let sampler: StackSampler
    private let writer: ReportWriter?
    private let logger: Logger
    /// Where the watchdog thread's log lines go to `logger`: never written on that thread.
    private let logQueue = WatchdogLogQueue()
    private let handler: (@Sendable (WatchdogEvent) -> Void)?
    /// Where the watchdog's figures go (see ``WatchdogMetrics``), or `nil` for none.
    public let metrics: WatchdogMetrics?
    // The loops, with a version so the watchdog thread copies the list only when it changed.
    private let sources = Mutex<(list: [LoopSource], version: Int)>(([], 0))
    private let control = Mutex<Control>(Control())
    /// Who gets each stall's final report (the OTLP profile exporter), on the watchdog thread.
    private let finalReportObservers = Mutex<[@Sendable (StallReport) -> Void]>([])
    /// The look counters of each pinged loop the watchdog thread watches now.
    private let lookCounters = Mutex<[ObjectIdentifier: LookCounters]>([:])

    private struct Control {
        var running = false
        var thread: PlatformThread.Handle?
        var threadID: ThreadID?
    }

    /// The watchdog thread's kernel id while it runs (threads it starts inherit its name, so the
    /// name alone does not find it).
    var threadID: ThreadID? { control.withLock { $0.running ? $0.threadID : nil } }

    /// Creates a stopped watchdog.
    ///
    /// - Parameters:
    ///   - configuration: thresholds and limits; validated here.
    ///   - reportDirectory: where JSON reports go (bounded, 0600 files); `nil` keeps them in events only.
    ///   - reportLimits: how many reports, bytes and days the directory keeps (the oldest go first).
    ///   - logger: swift-log logger for stall warnings and errors. The watchdog thread's lines reach
    ///     its handler from a queue of Stallwatch's own, so a handler that blocks (stderr into a pipe
    ///     nobody reads) never holds up detection; ``stop()`` waits for them (at most 5 s). Past
    ///     1 024 lines waiting, lines are dropped, and one error line says how many.
    ///   - metrics: swift-metrics figures (stalls by loop and cause, loop lag, sampler cost...), sent
    ///     to the backend the application bootstrapped; `nil` for none. Add process figures with
    ///     `WatchdogMetrics(process: ProcessMetrics())`.
    ///   - onEvent: called for every event, besides ``events``: on the watchdog thread, or for a
    ///     report that could not be written, on the report writer's queue. Keep it short, and wait
    ///     on nothing a log write may hold: `fflush(nil)` takes standard error's lock, which a log
    ///     line blocked on a full pipe keeps (the examples write each event to standard output with
    ///     one unbuffered `FileHandle` write).
    public convenience init(configuration: WatchdogConfiguration = WatchdogConfiguration(),
                            reportDirectory: String? = nil,
                            reportLimits: ReportStoreLimits = ReportStoreLimits(),
                            logger: Logger = Logger(label: "stallwatch"),
                            metrics: WatchdogMetrics? = .standard,
                            onEvent: (@Sendable (WatchdogEvent) -> Void)? = nil) throws {
        try self.init(configuration: configuration, sampler: nil, reportDirectory: reportDirectory,
                      reportLimits: reportLimits, logger: logger, metrics: metrics, onEvent: onEvent)
    }

    /// The same with a sampler of the package's choosing (tests and the bench set its unwinder).
    package init(configuration: WatchdogConfiguration = WatchdogConfiguration(),
                 sampler: StackSampler?,
                 reportDirectory: String? = nil,
                 reportLimits: ReportStoreLimits = ReportStoreLimits(),
                 logger: Logger = Logger(label: "stallwatch"),
                 metrics: WatchdogMetrics? = .standard,
                 onEvent: (@Sendable (WatchdogEvent) -> Void)? = nil) throws {
        self.configuration = try configuration.validated()
        self.sampler = try sampler ?? StackSampler(configuration: {
            var c = StackSampler.Configuration()
            c.signalFreeSampling = configuration.signalFreeSampling
            return c
        }())
        self.logger = logger
        self.handler = onEvent
        self.metrics = metrics
        let (events, continuation) = AsyncStream.makeStream(of: WatchdogEvent.self, bufferingPolicy: .bufferingNewest(1000))
        (self.events, self.continuation) = (events, continuation)
        self.writer = reportDirectory.map { directory in
            ReportWriter(store: ReportStore(directory: directory, limits: reportLimits), logger: logger) { [continuation, onEvent, metrics] message in
                metrics?.record(.error(message))
                continuation.yield(.error(message))
                onEvent?(.error(message))
            }
        }
    }

    deinit {
        stop()
        continuation.finish()
    }

    /// A new heartbeat probe for the loop called `name`, already monitored.
    public func makeProbe(name: String) -> HeartbeatProbe {
        let probe = HeartbeatProbe(name: name)
        monitor(probe)
        return probe
    }

    /// Starts monitoring a heartbeat probe.
    public func monitor(_ probe: HeartbeatProbe) { add(.heartbeat(probe)) }

    /// Starts monitoring a ping probe. Its first ping is posted at once: the ping that runs tells
    /// which thread serves the loop, and a loop stalled before any ping ran on it is reported
    /// without a thread, stack or cause (a service that begins serving right after this call would
    /// otherwise race the watchdog's first round).
    public func monitor(_ probe: PingProbe) {
        if add(.ping(probe)) { probe.pingIfIdle() }
    }

    /// Returns whether `source` was not monitored yet.
    @discardableResult
    private func add(_ source: LoopSource) -> Bool {
        let added = sources.withLock { s in
            guard !s.list.contains(where: { $0.identity == source.identity }) else { return false }
            s.list.append(source)
            s.version += 1
            return true
        }
        sw_pool_wake_all()
        return added
    }

    /// Stops monitoring a probe (of either kind).
    public func unmonitor(_ probe: AnyObject) {
        sources.withLock { s in
            s.list.removeAll { $0.identity == ObjectIdentifier(probe) }
            s.version += 1
        }
        sw_pool_wake_all()
    }

    /// Calls `observer` with every stall's final report (the one written to disk when it ends), on
    /// the watchdog thread: it must only hand the report over.
    package func observeFinalReports(_ observer: @escaping @Sendable (StallReport) -> Void) {
        finalReportObservers.withLock { $0.append(observer) }
    }

    /// What looking at `probe`'s loop has cost and found since this watchdog's thread began
    /// watching it (for benchmarks and tests); `nil` while it does not.
    package func lookCounts(of probe: PingProbe) -> LookCounters.Snapshot? {
        lookCounters.withLock { $0[ObjectIdentifier(probe)] }?.snapshot
    }

    /// An `error` event from a part of the package outside the watchdog thread (an exporter):
    /// counted, in ``events`` and to `onEvent`, and logged.
    package func post(error message: String) {
        logger.writing(through: logQueue).error("\(message)")
        metrics?.record(.error(message))
        continuation.yield(.error(message))
        handler?(.error(message))
    }

    /// Whether the watchdog thread is running.
    public var isRunning: Bool { control.withLock { $0.running } }

    /// Starts the watchdog thread. Idempotent. A running watchdog keeps itself alive (its thread
    /// holds a reference) until ``stop()``; `ServiceGroup` calls that at shutdown.
    public func start() throws(SamplerError) {
        StallAttribution.installKey()
        try control.withLock { (c: inout Control) throws(SamplerError) in
            guard !c.running else { return }
            c.running = true
            do throws(PlatformThread.StartFailure) {
                c.thread = try PlatformThread.start { [self] in threadMain() }
            } catch {
                c.running = false
                throw SamplerError.system(operation: "creating the watchdog thread", errno: error.code)
            }
        }
        // The async call chains of pool jobs: learnt from a probe job once per process, where
        // stacks are sampled at all (elsewhere the start message says what is missing).
        if SamplingSupport.isAvailable { learnAsyncChains() }
        // Where the runtime keeps a thread's running task, for dating pool jobs by their stamps.
        if SamplingSupport.isAvailable, configuration.watchPoolJobs { PoolJobStamps.learnInBackground() }
        if !Self.symbolsPreloaded.exchange(true, ordering: .relaxed) {
            do {
                try Symbolizer.shared.preloadInBackground()
            } catch {
                logger.notice("symbols are read when first needed", metadata: ["reason": "no thread to preload them (error \(error.code))"])
            }
        }
    }

    /// Learns how to read async call chains (once per process); a failure is an error event and a
    /// log line, and stacks then end at the first `await` that suspended.
    private func learnAsyncChains() {
        AsyncChainLayout.learnInBackground { [logger, metrics, continuation, handler] why in
            let message = "async callers are not shown in stacks: \(why)"
            logger.error("async call chains are off", metadata: ["reason": "\(why)"])
            metrics?.record(.error(message))
            continuation.yield(.error(message))
            handler?(.error(message))
        }
    }

    /// Whether a watchdog of this process has started loading the executable's symbols.
    private static let symbolsPreloaded = Atomic<Bool>(false)

    /// Stops the watchdog and joins its thread (within one round's work; it never waits out a
    /// period), then waits up to 5 s for queued reports to reach the disk (stalls in progress get
    /// their final duration). Idempotent; samplers' timers are deleted.
    public func stop() {
        let thread: PlatformThread.Handle? = control.withLock { c in
            guard c.running else { return nil }
            c.running = false
            defer { c.thread = nil }
            return c.thread
        }
        guard let thread else { return }
        sw_pool_wake_all()
        if thread.isCurrent {
            thread.detach() // stopped from an event handler: the thread ends on its own
        } else {
            thread.join()
            writer?.flush()
            logQueue.flush()
        }
    }

    private func threadMain() {
        _ = sw_thread_set_name("stallwatch")
        control.withLock { $0.threadID = .current }
        // A thread other than the pool's: with one of them, it confirms where glibc keeps a thread's id.
        sw_thread_layout_observe()
        let logger = logger.writing(through: logQueue)
        WatchdogPriority.raise(logger: logger)
        let engine = WatchdogEngine(configuration: configuration, sampler: sampler, writer: writer, logger: logger,
                                    metrics: metrics) { [continuation, handler, metrics] event in
            metrics?.record(event)
            continuation.yield(event)
            handler?(event)
        }
        engine.onFinalReport = { [self] report in
            for observer in finalReportObservers.withLock({ $0 }) { observer(report) }
        }
        engine.onLookCounters = { [self] id, counters in lookCounters.withLock { $0[id] = counters } }
        var seenVersion = -1
        // The watchdog sleeps on the word the pool's enqueue hook bumps (see ``PoolRest``); `stop()`
        // and a change of loops bump it too. Read before the round: a bump during it ends the wait.
        while case let seen = sw_pool_wake_generation(), control.withLock({ $0.running }) {
            if let changed = sources.withLock({ s in s.version == seenVersion ? nil : (s.list, s.version) }) {
                engine.sync(changed.0)
                seenVersion = changed.1
            }
            let next = engine.round()
            let now = MonotonicClock.now()
            if next > now {
                let wait = next - now
                if engine.loopRest.hasSet {
                    engine.loopRest.wait(seen: seen, timeout: wait)
                } else {
                    sw_pool_wake_wait(seen, wait.clampedNanoseconds)
                }
            }
        }
        engine.shutdown()
    }
}
