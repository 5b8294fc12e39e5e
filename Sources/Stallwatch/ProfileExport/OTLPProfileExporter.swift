#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ServiceLifecycle
import StallwatchExport
import StallwatchReport
import Synchronization

/// Sends one OpenTelemetry profile per stall (`opentelemetry/proto/profiles/v1development`, over
/// OTLP/HTTP) to a Collector or any backend that takes the profiles signal, so a stall's samples
/// outlive the replica whose disk holds its report.
///
/// Each profile is the stall's final report: its samples by stack, its facts as attributes, the
/// stalled request's trace as the samples' link, the report's JSON as the original payload (the
/// same report id as on disk and in the log records). Profiles wait in a queue bounded by
/// ``Configuration/maxQueuedBytes`` and go in batches, retried with back-off (`Retry-After`
/// honoured); the watchdog only hands a report over, so a receiver that is down or slow never holds
/// up detection. A failed try is an `error` event of the watchdog and counts in
/// `stallwatch_export_failures_total`; profiles given up count in `stallwatch_profiles_dropped_total`.
///
/// Needs the package's `OTLPProfiles` trait (it builds async-http-client):
/// `.package(url: "https://github.com/…/stallwatch", from: "…", traits: ["OTLPProfiles"])`.
/// Run it in the `ServiceGroup` before the watchdog, so that it stops after it and sends the
/// stalls the watchdog closes when it stops:
///
/// ```swift
/// if let settings = try OTLPProfileExporter.Configuration.fromEnvironment(ProcessInfo.processInfo.environment) {
///     let exporter = try OTLPProfileExporter(configuration: settings, watchdog: watchdog)
///     services.insert(exporter, at: 0)
/// }
/// ```
public final class OTLPProfileExporter: Service, Sendable {
    /// The validated configuration.
    public let configuration: Configuration
    /// Makes the sender when ``run()`` starts (it is shut down when it ends): an exporter that is
    /// made but never run holds no client.
    private let makeSender: @Sendable () -> any ProfileRequestSender
    private let report: @Sendable (String) -> Void
    private let metrics: WatchdogMetrics?
    private let inbox = Mutex<Inbox>(Inbox())
    private let doorbell = ExportDoorbell()
    /// Set at graceful shutdown: the instant by which whatever is left must be sent.
    private let stopAt = Mutex<ContinuousClock.Instant?>(nil)
    private let figures = Mutex<Statistics>(Statistics())

    /// Reports handed over by the watchdog thread, not encoded yet.
    private struct Inbox {
        var reports: [StallReport] = []
        var dropped: [String] = []
    }

    /// Reports waiting to be encoded at most: past this many (the loop encodes them as they come,
    /// so only a stalled exporter task gets there) the oldest are dropped, and said.
    static let inboxLimit = 256

    /// What the exporter did so far.
    public struct Statistics: Sendable, Equatable {
        /// Profiles the receiver accepted.
        public var sent = 0
        /// Profiles given up: refused for good, out of tries, pushed out of the bound, or unsent at shutdown.
        public var dropped = 0
        /// Profiles sent without their original payload to fit one request.
        public var cut = 0
        /// Requests that failed (each try counts).
        public var failedRequests = 0
        /// The bytes queued now, and the most they ever were (encoded, before compression).
        public var queuedBytes = 0
        public var peakQueuedBytes = 0
    }

    /// A snapshot of ``Statistics``.
    public var statistics: Statistics { figures.withLock { $0 } }

    /// An exporter of `watchdog`'s stalls. Nothing is sent until ``run()`` runs.
    /// - Throws: ``OTLPExporterError`` for a configuration that ``Configuration/validated()``
    ///   refuses, or when the package was built without its `OTLPProfiles` trait.
    public convenience init(configuration: Configuration, watchdog: Watchdog) throws(OTLPExporterError) {
        #if OTLPProfiles
        let valid = try configuration.validated()
        self.init(validated: valid, sender: { HTTPClientProfileSender(url: valid.endpoint) }, watchdog: watchdog)
        #else
        throw OTLPExporterError("Stallwatch was built without its OTLPProfiles trait, which sending profiles needs: "
                                + "add traits: [\"OTLPProfiles\"] to its .package(...) line")
        #endif
    }

    /// The same over any sender (the package's tests).
    package convenience init(configuration: Configuration, sender: any ProfileRequestSender,
                             watchdog: Watchdog) throws(OTLPExporterError) {
        self.init(validated: try configuration.validated(), sender: { sender }, watchdog: watchdog)
    }

    private init(validated: Configuration, sender: @escaping @Sendable () -> any ProfileRequestSender, watchdog: Watchdog) {
        configuration = validated
        makeSender = sender
        metrics = watchdog.metrics
        report = { [weak watchdog] message in watchdog?.post(error: message) }
        watchdog.observeFinalReports { [weak self] in self?.enqueue($0) }
    }

    /// Hands a stall's final report over: on the watchdog thread, so it only appends and wakes.
    func enqueue(_ report: StallReport) {
        inbox.withLock { box in
            box.reports.append(report)
            if box.reports.count > Self.inboxLimit { box.dropped.append(box.reports.removeFirst().id) }
        }
        doorbell.ring()
    }

    /// Sends profiles until graceful shutdown (or cancellation), then sends what is left within one
    /// ``Configuration/timeout``; what is still unsent then is dropped, and an error event says so.
    public func run() async throws {
        let sender = makeSender()
        await withGracefulShutdownHandler {
            await loop(sender)
        } onGracefulShutdown: {
            self.stopAt.withLock { $0 = $0 ?? .now + self.configuration.timeout }
            self.doorbell.ring()
        }
        await sender.shutdown()
    }

    /// When the exporter must be done by, once it is stopping (cancellation: now).
    private var deadline: ContinuousClock.Instant? {
        if Task.isCancelled { return .now }
        return stopAt.withLock { $0 }
    }

    private func loop(_ sender: any ProfileRequestSender) async {
        var queue = ProfileExportQueue(maxQueuedBytes: configuration.maxQueuedBytes,
                                       maxRequestBytes: configuration.maxRequestBytes)
        while true {
            take(into: &queue)
            if queue.isEmpty {
                if deadline != nil { break }
                await doorbell.wait()
                continue
            }
            await pause(configuration.batchDelay, queue: &queue, untilStopping: true)
            await sendOldest(&queue, through: sender)
            if let deadline, ContinuousClock.now >= deadline { break }
        }
        take(into: &queue)
        if !queue.isEmpty {
            let ids = queue.remove(queue.entries.count)
            dropped(ids, why: "still unsent when the exporter stopped")
        }
    }

    /// Encodes what the watchdog handed over into `queue`.
    private func take(into queue: inout ProfileExportQueue) {
        let (reports, lost) = inbox.withLock { box in
            defer { box = Inbox() }
            return (box.reports, box.dropped)
        }
        if !lost.isEmpty { dropped(lost, why: "more than \(Self.inboxLimit) stalls waited to be encoded") }
        let resource = configuration.resourceAttributes
        for stall in reports {
            var item = OTLPProfileEncoder.Item(report: stall)
            do {
                item.json = try ReportStore.encode(stall)
            } catch {
                item.cut = "original payload (the report) left out: it could not be encoded as JSON: \(error)"
            }
            let added = queue.add(item) { OTLPProfileEncoder.encode([$0], resource: resource).count }
            if added.cutFrom != nil { figures.withLock { $0.cut += 1 } }
            if let size = added.refused {
                dropped([stall.id], why: "its profile is \(size) bytes without its payload, over the \(configuration.maxRequestBytes)-byte request bound")
            }
            if !added.dropped.isEmpty {
                dropped(added.dropped, why: "the queue was past its \(configuration.maxQueuedBytes)-byte bound")
            }
        }
        figures.withLock { f in
            f.queuedBytes = queue.queuedBytes
            f.peakQueuedBytes = max(f.peakQueuedBytes, queue.queuedBytes)
        }
    }

    /// Waits `duration`, taking in what arrives meanwhile; cut to the shutdown's deadline, or at
    /// its start with `untilStopping`. Woken only by the doorbell: every wake-up is a job on the
    /// pool the watchdog watches, and a 100 ms poll here added about 10 % to the watchdog thread's
    /// CPU with a stall every 2.5 s (`scripts/bench-exporter-down.py`, receiver down or slow).
    private func pause(_ duration: Duration, queue: inout ProfileExportQueue, untilStopping: Bool = false) async {
        var end = ContinuousClock.now + duration
        while true {
            if let deadline {
                if untilStopping { return }
                end = min(end, deadline)
            }
            guard end > .now else { return }
            await doorbell.wait(until: end)
            take(into: &queue)
        }
    }

    /// One try of the oldest batch; on failure, the wait before the next (or the batch given up).
    private func sendOldest(_ queue: inout ProfileExportQueue, through sender: any ProfileRequestSender) async {
        let count = queue.batchCount
        var body = OTLPProfileEncoder.encode(queue.batch(count), resource: configuration.resourceAttributes)
        var headers = [("Content-Type", "application/x-protobuf")] + configuration.headers.sorted { $0.key < $1.key }
        if configuration.compression == .gzip {
            do {
                body = try Compression.gzip(body)
                headers.append(("Content-Encoding", "gzip"))
            } catch {
                report("profiles sent uncompressed: gzip failed (\(error))")
            }
        }
        var timeout = configuration.timeout
        if let deadline { timeout = max(min(timeout, deadline - .now), .milliseconds(1)) }
        let answer = await sender.post(body, headers: headers, timeout: timeout)
        if let status = answer.status, (200..<300).contains(status) {
            let ids = queue.remove(count)
            figures.withLock { $0.sent += count; $0.queuedBytes = queue.queuedBytes }
            if let partial = OTLPAnswerBody.partialSuccess(answer.body) { rejected(partial, of: ids) }
            if let unread = answer.bodyUnread {
                report("the receiver took \(count) profile\(count == 1 ? "" : "s") (HTTP \(status)), but \(unread): whether it rejected some of them is not known")
            }
            return
        }
        let said = OTLPAnswerBody.failureMessage(answer.body, contentType: answer.contentType).map { ": \($0)" }
            ?? answer.bodyUnread.map { "; \($0)" } ?? ""
        let reason = (answer.status.map { "HTTP \($0)" } ?? answer.failure ?? "no answer") + said
        figures.withLock { $0.failedRequests += 1 }
        metrics?.recordExportFailure(reason: answer.status.map { "http_\($0)" } ?? "no_answer")
        let tries = queue.failed(count)
        let retryable = answer.status.map(ExportRetry.isRetryable) ?? true
        let asked = answer.retryAfter.flatMap { ExportRetry.retryAfter($0, nowUnixSeconds: Int64(time(nil))) }
        let wait = ExportRetry.delay(afterAttempt: tries, retryAfter: asked, jitter: .random(in: -1...1),
                                     longest: configuration.maxRetryDelay)
        let pastDeadline = deadline.map { ContinuousClock.now + wait >= $0 } ?? false
        let what = "\(count) profile\(count == 1 ? "" : "s") to \(configuration.endpoint) failed (\(reason))"
        guard retryable, tries < configuration.maxAttempts, !pastDeadline else {
            let why = !retryable ? "the receiver refused them for good" : pastDeadline
                ? "no time for another try before the exporter stops" : "out of tries (\(tries))"
            dropped(queue.remove(count), why: "\(what): \(why)")
            return
        }
        let seconds = (Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18) * 10
        report("exporting \(what); trying again in \(seconds.rounded() / 10) s (try \(tries) of \(configuration.maxAttempts))")
        await pause(wait, queue: &queue)
    }

    /// A receiver that took a request but rejected part of it (OTLP's partial success): the
    /// rejected profiles are lost, and which ones it does not say.
    private func rejected(_ partial: (rejected: Int64, message: String), of ids: [String]) {
        let why = partial.message.isEmpty ? "" : ": \(partial.message)"
        // None rejected, with a message: OTLP's warning. Said, not counted as a failure.
        guard partial.rejected > 0 else {
            report("the receiver accepted \(ids.count) profile\(ids.count == 1 ? "" : "s") with a warning\(why)")
            return
        }
        metrics?.recordExportFailure(reason: "partial_success")
        let lost = Int(clamping: min(partial.rejected, Int64(ids.count)))
        figures.withLock { $0.dropped += lost }
        metrics?.recordProfilesDropped(lost)
        report("the receiver rejected \(partial.rejected) of \(ids.count) profiles (among \(Self.listed(ids)))\(why)")
    }

    /// Report ids as an event lists them: the first 10.
    private static func listed(_ ids: [String]) -> String {
        ids.prefix(10).joined(separator: ", ") + (ids.count > 10 ? ", …" : "")
    }

    private func dropped(_ ids: [String], why: String) {
        guard !ids.isEmpty else { return }
        figures.withLock { $0.dropped += ids.count }
        metrics?.recordProfilesDropped(ids.count)
        report("\(ids.count) stall profile\(ids.count == 1 ? "" : "s") dropped (\(Self.listed(ids))): \(why)")
    }
}
