import Foundation
import InMemoryTracing
import Logging
import StallwatchReport
import Synchronization
import Testing
import Tracing
@testable import Stallwatch

/// What a log handler was given: the message, the metadata as strings, and the trace id of the
/// `ServiceContext` current while it ran (as swift-otel's handler reads it for the OTLP record).
private struct WrittenRecord: Sendable {
    var message: String
    var metadata: [String: String]
    var level: Logger.Level
    var function: String
    var traceID: String?
    var spanID: String?
}

private final class RecordingLog: Sendable {
    let records = Mutex<[WrittenRecord]>([])
}

private struct RecordingLogHandler: LogHandler {
    let log: RecordingLog
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var strings: [String: String] = [:]
        for (key, value) in event.metadata ?? [:] { strings[key] = "\(value)" }
        let span = ServiceContext.current?.inMemorySpanContext
        log.records.withLock {
            $0.append(WrittenRecord(message: event.message.description, metadata: strings, level: event.level,
                                    function: event.function, traceID: span?.traceID, spanID: span?.spanID))
        }
    }
}

@Suite("Stall log records", .serialized)
struct StallLogRecordTests {
    @Test("a stall's record: a readable line, OpenTelemetry's attribute names, the blamed function as its own")
    func recordOfAReport() {
        var report = StallReport(kind: .stall, id: "r-log", startTimeUnixNanoseconds: 1, duration: .milliseconds(1417),
                                 durationIsFinal: false, threadCount: 3, configuration: WatchdogConfiguration())
        report.loopName = "nio-loop-2"
        report.thread = ThreadIdentity(id: 4242, name: "NIO-ELT-0-#2")
        report.cause = StallCause(kind: .cpuBound, evidence: "running")
        report.blamedStack = [("hashPassword", "/srv/app"), ("login", "/srv/app"), ("handle", "/srv/app"), ("main", "/srv/app")]
            .enumerated().map { i, f in
                ReportFrame(address: UInt64(0x1000 + i), info: SymbolInfo(module: f.1, symbol: f.0), sampleCount: 20)
            }
        report.truncatedSampleCount = 2
        report.request = ReportRequest(method: "POST", route: "/login", traceID: "t", spanID: "s", sampleCount: 20)
        let event = StallLogRecord(report: report, ended: false, context: nil).event
        #expect(event.level == .warning)
        #expect(event.message.description == "nio-loop-2 stalled 1.42 s, cpuBound, in hashPassword ← login ← handle")
        #expect(event.function == "hashPassword")
        #expect(event.file == "/srv/app")
        let m = (event.metadata ?? [:]).mapValues { "\($0)" }
        #expect(m["event.name"] == "stallwatch.stall")
        #expect(m["thread.id"] == "4242")
        #expect(m["thread.name"] == "NIO-ELT-0-#2")
        #expect(m["code.function.name"] == "hashPassword")
        #expect(m["code.file.path"] == "/srv/app")
        #expect(m["stallwatch.loop"] == "nio-loop-2")
        #expect(m["stallwatch.cause"] == "cpuBound")
        #expect(m["stallwatch.duration_ms"] == "1417")
        #expect(m["stallwatch.report_id"] == "r-log")
        #expect(m["stallwatch.truncated"] == "true")
        #expect(m["http.route"] == "/login")
        report.durationIsFinal = true
        report.durationNanoseconds = 2_004_000_000
        let end = StallLogRecord(report: report, ended: true, context: nil).event
        #expect(end.message.description == "nio-loop-2 stall ended after 2.00 s, cpuBound, in hashPassword ← login ← handle")
        #expect(end.metadata?["event.name"] == "stallwatch.stall.ended")
        #expect(StallTelemetry.shortName("App.Auth.hashPassword(_: Swift.String) -> ()") == "hashPassword")
        #expect(StallTelemetry.shortName("PKCS5_PBKDF2_HMAC") == "PKCS5_PBKDF2_HMAC")
        #expect(StallTelemetry.shortName("closure #2 () -> () in closure #1 (Tracing.Span) -> () in App.login() async throws -> ()")
                == "closure in login")
        #expect(StallTelemetry.shortName("partial apply forwarder for App.Box<A>.run() -> ()") == "run")
        #expect(StallTelemetry.shortName("static (extension in App):Swift.Array<Swift.Int>.sum<A>(A) -> Swift.Int") == "sum")
        #expect(StallTelemetry.seconds(milliseconds: 5) == "0.01")
        #expect(StallTelemetry.seconds(milliseconds: 1_994) == "1.99")
    }

    @Test("a stalled request's records (at the stall, at its end) are written in its context; its own span has the stall")
    func recordsCarryTheRequestTrace() async throws {
        _ = attributionTracer
        let directory = temporaryDirectory("stall-log-records")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let written = RecordingLog()
        let logger = Logger(label: "stall-log-records") { _ in RecordingLogHandler(log: written) }
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(300)),
                                    reportDirectory: directory, logger: logger, metrics: nil)
        watchdog.monitor(PingProbe.cooperativePool())
        try watchdog.start()
        let probe = AttributionProbe()
        let ids = Mutex<(trace: String, span: String)?>(nil)
        let blocker = Task.detached {
            withSpan("blocker") { span in
                ids.withLock { $0 = span.context.inMemorySpanContext.map { ($0.traceID, $0.spanID) } }
                // The overload a middleware that holds the request's span calls.
                StallAttribution.serving(method: "POST", route: "/stall/log", span: span) {
                    let end = ContinuousClock.now + .milliseconds(1000)
                    _ = attributionFixtureSpin { ContinuousClock.now >= end || probe.shouldStop }
                }
            }
        }
        await blocker.value
        let report = try #require(try await finalPoolJobReports(in: directory).first)
        watchdog.stop()
        let (trace, spanID) = try #require(ids.withLock { $0 })
        let records = written.records.withLock { $0 }.filter { $0.metadata["stallwatch.report_id"] == report.id }
        let starts = records.filter { $0.metadata["event.name"] == "stallwatch.stall" }
        let ends = records.filter { $0.metadata["event.name"] == "stallwatch.stall.ended" }
        #expect(starts.count == 1 && ends.count == 1, "\(records.map(\.message))")
        for record in starts + ends {
            #expect(record.level == .warning)
            #expect(record.traceID == trace, "record \(record.message) has trace \(record.traceID ?? "none")")
            #expect(record.spanID == spanID)
            #expect(record.metadata["http.route"] == "/stall/log")
            #expect(record.message.hasPrefix("\(PoolJobWatcher.loopName) stal"), "\(record.message)")
        }
        #expect(ends.first?.metadata["stallwatch.final"] == "true")
        // The request's own span: the stall's event, while it was open, and its mark.
        let requestSpan = try #require(attributionTracer.finishedSpans.first { $0.spanID == spanID })
        let event = try #require(requestSpan.events.first { $0.name == "stallwatch.stall" },
                                 "\(requestSpan.events.map(\.name))")
        #expect(event.attributes["stallwatch.report_id"]?.toSpanAttribute() == .string(report.id))
        #expect(event.attributes["thread.id"]?.toSpanAttribute() == .int64(Int64(report.thread?.id ?? 0)))
        #expect(requestSpan.attributes["stallwatch.stalled"]?.toSpanAttribute() == .bool(true))
        #expect(requestSpan.attributes["stallwatch.report_id"]?.toSpanAttribute() == .string(report.id))
        let child = attributionTracer.finishedSpans.filter { $0.operationName == "stallwatch.stall" && $0.traceID == trace }
        #expect(child.count == 1, "the stall's own span stays")
        #expect(ends.first?.metadata["stallwatch.duration_ms"] == "\(report.durationNanoseconds / 1_000_000)")
    }
}
