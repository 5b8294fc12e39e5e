import ReportFixtures
import StallwatchReport
import Synchronization
import Testing
@testable import Stallwatch

/// Answers posts from a script (then 200s) and keeps what it was sent: the exporter's queue, retry
/// and give-up rules without a network. The real receiver (strict OTLP decoding, refused, slow,
/// 503) is `Tests/EndToEnd/otel_profiles.py`'s.
private final class ScriptedSender: ProfileRequestSender {
    struct Post { var body: [UInt8]; var headers: [(String, String)]; var timeout: Duration }
    private let state: Mutex<(answers: [ProfilePostAnswer], posts: [Post])>
    init(_ answers: [ProfilePostAnswer] = []) { state = Mutex((answers, [])) }
    var posts: [Post] { state.withLock { $0.posts } }
    func post(_ body: [UInt8], headers: [(String, String)], timeout: Duration) async -> ProfilePostAnswer {
        state.withLock { s in
            s.posts.append(Post(body: body, headers: headers, timeout: timeout))
            return s.answers.isEmpty ? ProfilePostAnswer(status: 200) : s.answers.removeFirst()
        }
    }
}

/// The error events a watchdog posted.
private final class ErrorLog: Sendable {
    let list = Mutex<[String]>([])
}

@Suite struct OTLPProfileExporterTests {
    private func report(_ id: String) -> StallReport {
        var r = ReportFixture.report()
        r.id = id
        return r
    }

    private func configuration(_ change: (inout OTLPProfileExporter.Configuration) -> Void = { _ in })
        -> OTLPProfileExporter.Configuration {
        var c = OTLPProfileExporter.Configuration(endpoint: "http://127.0.0.1:4318/v1development/profiles")
        c.batchDelay = .milliseconds(50)
        c.maxRetryDelay = .milliseconds(300)
        change(&c)
        return c
    }

    /// A watchdog (not started) whose error events are kept in `errors`.
    private func watchdog(_ errors: ErrorLog, threshold: Duration = .milliseconds(500)) throws -> Watchdog {
        try Watchdog(configuration: .init(threshold: threshold), metrics: nil) { event in
            if event.kind == .error { errors.list.withLock { $0.append(event.message ?? "") } }
        }
    }

    /// Runs the exporter until `done` holds (at most 10 s), then cancels it.
    private func run(_ exporter: OTLPProfileExporter, until done: @escaping @Sendable () -> Bool) async throws {
        let task = Task { try await exporter.run() }
        let start = ContinuousClock.now
        while !done(), ContinuousClock.now - start < .seconds(10) { try await Task.sleep(for: .milliseconds(20)) }
        task.cancel()
        try await task.value
    }

    @Test func stallsGoInOneBatchedRequestWithTheirHeaders() async throws {
        let errorEvents = ErrorLog()
        let watchdog = try watchdog(errorEvents)
        let sender = ScriptedSender()
        let exporter = try OTLPProfileExporter(configuration: configuration { $0.headers = ["x-api-key": "k"]; $0.compression = .gzip },
                                               sender: sender, watchdog: watchdog)
        exporter.enqueue(report("a"))
        exporter.enqueue(report("b"))
        try await run(exporter) { exporter.statistics.sent == 2 }
        let errors = errorEvents.list.withLock { $0 }
        #expect(exporter.statistics.sent == 2)
        #expect(sender.posts.count == 1)
        let headers = Dictionary(uniqueKeysWithValues: sender.posts.first?.headers ?? [])
        #expect(headers["Content-Type"] == "application/x-protobuf")
        #expect(headers["Content-Encoding"] == "gzip")
        #expect(headers["x-api-key"] == "k")
        #expect(sender.posts.first?.body.prefix(2) == [0x1f, 0x8b])
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test func aShedRequestIsTriedAgainAfterItsRetryAfterAndSaidAsAnError() async throws {
        let errorEvents = ErrorLog()
        let watchdog = try watchdog(errorEvents)
        let sender = ScriptedSender([ProfilePostAnswer(status: 503, retryAfter: "0"), ProfilePostAnswer(failure: "connection refused")])
        let exporter = try OTLPProfileExporter(configuration: configuration(), sender: sender, watchdog: watchdog)
        exporter.enqueue(report("a"))
        try await run(exporter) { exporter.statistics.sent == 1 }
        let errors = errorEvents.list.withLock { $0 }
        #expect(exporter.statistics.sent == 1)
        #expect(exporter.statistics.failedRequests == 2)
        #expect(sender.posts.count == 3)
        #expect(errors.count == 2, "\(errors)")
        #expect(errors.first?.contains("HTTP 503") == true, "\(errors)")
        #expect(errors.last?.contains("connection refused") == true, "\(errors)")
        #expect(errors.allSatisfy { $0.contains("trying again") })
    }

    @Test func aPartialSuccessIsAnErrorEventAndItsRejectedProfilesCountAsDropped() async throws {
        let errorEvents = ErrorLog()
        let watchdog = try watchdog(errorEvents)
        // opentelemetry-proto's own encoding of an ExportProfilesServiceResponse whose
        // partial_success rejects 1 profile with "too old" (Python, 1.45.2).
        let partial: [UInt8] = [0x0a, 0x0b, 0x08, 0x01, 0x12, 0x07] + Array("too old".utf8)
        let sender = ScriptedSender([ProfilePostAnswer(status: 200, body: partial, contentType: "application/x-protobuf")])
        let exporter = try OTLPProfileExporter(configuration: configuration { $0.batchDelay = .milliseconds(200) },
                                               sender: sender, watchdog: watchdog)
        exporter.enqueue(report("a"))
        exporter.enqueue(report("b"))
        try await run(exporter) { exporter.statistics.dropped == 1 }
        let errors = errorEvents.list.withLock { $0 }
        #expect(exporter.statistics.sent == 2)
        #expect(exporter.statistics.dropped == 1)
        #expect(errors.count == 1 && errors.first?.contains("rejected 1 of 2 profiles (among a, b): too old") == true, "\(errors)")
    }

    @Test func aFailedAnswersOwnWordsAreInItsErrorEvent() async throws {
        let errorEvents = ErrorLog()
        let watchdog = try watchdog(errorEvents)
        // google.rpc.Status { code: 8, message: "over quota" }, as OTLP/HTTP answers a failure.
        let status: [UInt8] = [0x08, 0x08, 0x12, 0x0a] + Array("over quota".utf8)
        let sender = ScriptedSender([
            ProfilePostAnswer(status: 429, retryAfter: "0", body: status, contentType: "application/x-protobuf"),
            ProfilePostAnswer(status: 503, retryAfter: "0", body: Array("  shedding load\n".utf8), contentType: "text/plain"),
        ])
        let exporter = try OTLPProfileExporter(configuration: configuration(), sender: sender, watchdog: watchdog)
        exporter.enqueue(report("a"))
        try await run(exporter) { exporter.statistics.sent == 1 }
        let errors = errorEvents.list.withLock { $0 }
        #expect(errors.count == 2, "\(errors)")
        #expect(errors.first?.contains("(HTTP 429: over quota)") == true, "\(errors)")
        #expect(errors.last?.contains("(HTTP 503: shedding load)") == true, "\(errors)")
    }

    @Test func anAnswerWhoseBodyWasNotReadSaysSo() async throws {
        let errorEvents = ErrorLog()
        let watchdog = try watchdog(errorEvents)
        let sender = ScriptedSender([
            ProfilePostAnswer(status: 503, retryAfter: "0", bodyUnread: "its body is over 64 KiB"),
            ProfilePostAnswer(status: 200, bodyUnread: "its body could not be read (connection reset)"),
        ])
        let exporter = try OTLPProfileExporter(configuration: configuration(), sender: sender, watchdog: watchdog)
        exporter.enqueue(report("a"))
        try await run(exporter) { exporter.statistics.sent == 1 && errorEvents.list.withLock { $0.count } == 2 }
        let errors = errorEvents.list.withLock { $0 }
        #expect(errors.count == 2, "\(errors)")
        #expect(errors.first?.contains("(HTTP 503; its body is over 64 KiB)") == true, "\(errors)")
        #expect(errors.last?.contains("took 1 profile (HTTP 200), but its body could not be read (connection reset)") == true, "\(errors)")
        #expect(exporter.statistics.sent == 1 && exporter.statistics.dropped == 0)
    }

    @Test func aRefusedRequestIsDroppedAtOnceAndARetriedOneAfterItsTries() async throws {
        let errorEvents = ErrorLog()
        let watchdog = try watchdog(errorEvents)
        let sender = ScriptedSender([ProfilePostAnswer(status: 400)] + Array(repeating: ProfilePostAnswer(status: 502), count: 3))
        let exporter = try OTLPProfileExporter(configuration: configuration { $0.maxAttempts = 3; $0.batchDelay = .zero },
                                               sender: sender, watchdog: watchdog)
        exporter.enqueue(report("bad"))
        try await run(exporter) { exporter.statistics.dropped == 1 }
        let errors = errorEvents.list.withLock { $0 }
        exporter.enqueue(report("shed"))
        try await run(exporter) { exporter.statistics.dropped == 2 }
        let more = errorEvents.list.withLock { $0 }
        #expect(exporter.statistics.sent == 0)
        #expect(exporter.statistics.dropped == 2)
        #expect(sender.posts.count == 4)
        #expect(errors.contains { $0.contains("bad") && $0.contains("for good") }, "\(errors)")
        #expect(more.contains { $0.contains("shed") && $0.contains("out of tries (3)") }, "\(more)")
    }

    @Test func whatIsUnsentAtShutdownIsDroppedAndSaid() async throws {
        let errorEvents = ErrorLog()
        let watchdog = try watchdog(errorEvents)
        let sender = ScriptedSender(Array(repeating: ProfilePostAnswer(failure: "connection refused"), count: 100))
        let exporter = try OTLPProfileExporter(configuration: configuration { $0.maxAttempts = 100 }, sender: sender, watchdog: watchdog)
        exporter.enqueue(report("late"))
        try await run(exporter) { exporter.statistics.failedRequests >= 2 }
        let errors = errorEvents.list.withLock { $0 }
        #expect(exporter.statistics.dropped == 1)
        #expect(errors.contains { $0.contains("late") && $0.contains("dropped") }, "\(errors)")
    }

    @Test func theFinalReportOfARealStallReachesTheExporter() async throws {
        let watchdog = try watchdog(ErrorLog(), threshold: .milliseconds(100))
        let sender = ScriptedSender()
        let exporter = try OTLPProfileExporter(configuration: configuration(), sender: sender, watchdog: watchdog)
        let probe = watchdog.makeProbe(name: "exported-loop")
        try watchdog.start()
        probe.busy()
        var spin = 0.0
        let until = ContinuousClock.now + .milliseconds(400)
        while ContinuousClock.now < until { spin += 1 }
        probe.idle()
        // The test's own body is a pool job that held its thread too: its stall may be exported as well.
        let bodies: @Sendable () -> [String] = { sender.posts.map { String(decoding: $0.body, as: UTF8.self) } }
        try await run(exporter) { bodies().contains { $0.contains("exported-loop") } }
        watchdog.stop()
        #expect(spin > 0)
        #expect(bodies().filter { $0.contains("exported-loop") }.count == 1)
    }
}
