import Foundation
import Glibc
import InMemoryTracing
import StallwatchPolicy
import StallwatchReport
import StallwatchExport
import Synchronization
import Testing
import Tracing
@testable import Stallwatch

/// The in-memory tracer, bootstrapped once for the whole test process (bootstrapping twice traps).
let attributionTracer: InMemoryTracer = {
    let tracer = InMemoryTracer(recordInjections: false, recordExtractions: false)
    InstrumentationSystem.bootstrap(tracer)
    return tracer
}()

@inline(never)
func attributionFixtureSpin(until stop: () -> Bool) -> UInt64 {
    var x: UInt64 = 1
    while !stop() {
        for _ in 0..<1000 { x = x &* 6364136223846793005 &+ 1442695040888963407 }
    }
    return x
}

/// State a test shares with the tasks it starts.
final class AttributionProbe: Sendable {
    let stop = Atomic<Bool>(false)
    let seen = Mutex<(ThreadID, UInt64)?>(nil)
    let trace = Mutex<String?>(nil)
    var shouldStop: Bool { stop.load(ordering: .acquiring) }
}

@Suite("Request attribution", .serialized)
struct AttributionTests {
    @Test("the registry names a request while in flight and for a while after; an unknown tag names none")
    func registry() {
        let registry = RequestRegistry()
        let a = registry.register(RequestEntry(method: "GET", route: { "/a" }, context: nil))
        let b = registry.register(RequestEntry(method: "POST", route: { "/b/:id" }, context: nil))
        #expect(a != 0 && b != 0 && a != b)
        #expect(registry.lookup(a)?.route() == "/a")
        #expect(registry.lookup(b)?.method == "POST")
        #expect(registry.lookup(b &+ 1000) == nil)
        registry.finish(a)
        #expect(registry.inFlightCount == 1)
        #expect(registry.lookup(a)?.route() == "/a", "a finished request is still named for a late final report")
        // Past the recent window it is forgotten; tags are never reused.
        for _ in 0..<RequestRegistry.recentCapacity {
            registry.finish(registry.register(RequestEntry(method: "GET", route: { "/x" }, context: nil)))
        }
        #expect(registry.lookup(a) == nil)
        #expect(registry.lookup(b)?.route() == "/b/:id", "in flight: never evicted")
    }

    @Test("trace and span ids from W3C traceparent, from keys naming them, and none without a tracer")
    func traceIDs() {
        let w3c = TraceIDs(headers: ["traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"])
        #expect(w3c == TraceIDs(traceID: "4bf92f3577b34da6a3ce929d0e0e4736", spanID: "00f067aa0ba902b7"))
        let memory = TraceIDs(headers: ["in-memory-trace-id": "t1", "in-memory-span-id": "s1"])
        #expect(memory == TraceIDs(traceID: "t1", spanID: "s1"))
        let b3 = TraceIDs(headers: ["X-B3-TraceId": "abc", "X-B3-SpanId": "def", "X-B3-Sampled": "1"])
        #expect(b3 == TraceIDs(traceID: "abc", spanID: "def"))
        #expect(TraceIDs(headers: ["traceparent": "garbage"]) == TraceIDs())
        #expect(TraceIDs(headers: [:]) == TraceIDs())
    }

    @Test("the signal handler reads the tag of the request a thread serves (synchronous, no task), and none outside")
    func handlerReadsThreadTag() throws {
        let sampler = try StackSampler()
        StallAttribution.installKey()
        let published = Atomic<UInt64>(0)
        let serving = TestThread(name: "sw-attr-sync") { t in
            StallAttribution.serving(method: "GET", route: "/sync") {
                published.store(StallAttribution.tag, ordering: .releasing)
                _ = attributionFixtureSpin { t.shouldStop }
            }
        }
        let idle = TestThread(name: "sw-attr-none") { t in _ = attributionFixtureSpin { t.shouldStop } }
        defer { serving.stopAndJoin(); idle.stopAndJoin() }
        while published.load(ordering: .acquiring) == 0 { usleep(1000) }
        let tag = published.load(ordering: .acquiring)
        let servingTid = try #require(serving.tid), idleTid = try #require(idle.tid)
        for _ in 0..<5 {
            let s = try sampler.signalCapture(servingTid, unwinder: .framePointer, timeout: .milliseconds(500))
            #expect(s.requestTag == tag)
            let i = try sampler.signalCapture(idleTid, unwinder: .framePointer, timeout: .milliseconds(500))
            #expect(i.requestTag == nil)
        }
        #expect(StallAttribution.registry.lookup(tag)?.route() == "/sync")
    }

    @Test("the handler reads the tag of the task a pool thread runs, inherited by a child task")
    func handlerReadsTaskTag() async throws {
        let sampler = try StackSampler()
        let probe = AttributionProbe()
        let job = Task.detached {
            await StallAttribution.serving(method: "GET", route: "/task") {
                let parent = StallAttribution.tag
                // A child task inherits the request.
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        probe.seen.withLock { $0 = (ThreadID.current, parent) }
                        _ = attributionFixtureSpin { probe.shouldStop }
                    }
                }
            }
        }
        defer { probe.stop.store(true, ordering: .releasing) }
        var seen: (ThreadID, UInt64)?
        while seen == nil { try await Task.sleep(for: .milliseconds(2)); seen = probe.seen.withLock { $0 } }
        let (tid, tag) = try #require(seen)
        #expect(tag != 0)
        let s = try sampler.signalCapture(tid, unwinder: .framePointer, timeout: .milliseconds(500))
        #expect(s.requestTag == tag)
        probe.stop.store(true, ordering: .releasing)
        await job.value
    }

    @Test("a stalled pool job names its request and trace, not one in flight elsewhere; the stall lands on the trace")
    func poolJobStallNamesRequest() async throws {
        let tracer = attributionTracer
        let directory = temporaryDirectory("attribution")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(300)),
                                    reportDirectory: directory, metrics: nil) { log.append($0) }
        watchdog.monitor(PingProbe.cooperativePool())
        try watchdog.start()
        let probe = AttributionProbe()
        // Others in flight meanwhile: awaiting, never blocking.
        let others = (0..<8).map { i in
            Task.detached {
                try await withSpan("other \(i)") { _ in
                    try await StallAttribution.serving(method: "GET", route: "/other") {
                        try await Task.sleep(for: .milliseconds(900))
                    }
                }
            }
        }
        let blocker = Task.detached {
            withSpan("blocker") { span in
                probe.trace.withLock { $0 = span.context.inMemorySpanContext?.traceID }
                StallAttribution.serving(method: "POST", route: "/stall/:id") {
                    let end = ContinuousClock.now + .milliseconds(1200)
                    _ = attributionFixtureSpin { ContinuousClock.now >= end || probe.shouldStop }
                }
            }
        }
        await blocker.value
        for o in others { try await o.value }
        // The final report: the first may have been made before any sample (a starved thread).
        let stored = try await finalPoolJobReports(in: directory)
        watchdog.stop()
        let trace = try #require(probe.trace.withLock { $0 })
        let report = try #require(stored.first { $0.durationIsFinal }, "\(log.events.withLock { $0.map(\.jsonLine) })")
        let request = try #require(report.request, "report \(report.id) names no request")
        #expect(request.route == "/stall/:id")
        #expect(request.method == "POST")
        #expect(request.traceID == trace)
        #expect(request.sampleCount > 0)
        #expect(log.allStalls.allSatisfy { $0.request?.route != "/other" })
        let stallSpans = tracer.finishedSpans.filter { $0.operationName == "stallwatch.stall" && $0.traceID == trace }
        #expect(stallSpans.count == 1, "\(tracer.finishedSpans.map { ($0.operationName, $0.traceID) })")
        let span = try #require(stallSpans.first)
        #expect(span.events.contains { $0.name == "stallwatch.stall" })
        #expect(span.attributes["stallwatch.report_id"]?.toSpanAttribute() == .string(report.id))
    }

    @Test("a pool job blocked in a system call from its start (never signalled) names its request and trace",
          arguments: ["sleep", "lock"])
    func blockedPoolJobNamesRequest(kind: String) async throws {
        let tracer = attributionTracer
        let directory = temporaryDirectory("attribution-blocked")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(300)),
                                    reportDirectory: directory, metrics: nil) { log.append($0) }
        watchdog.monitor(PingProbe.cooperativePool())
        try watchdog.start()
        // The first requests teach where a blocked thread's task keeps the tag (two tasks suffice;
        // more in case another test's request is learning at the same moment).
        for _ in 0..<4 {
            await Task.detached { await StallAttribution.serving(method: "GET", route: "/warm-up") { await Task.yield() } }.value
        }
        // The watchdog thread may be the second thread the thread layout is confirmed on.
        var learning = Duration.zero
        while !BlockedRequestTags.isReady && BlockedRequestTags.failure == nil && learning < .seconds(5) {
            await Task.detached { await StallAttribution.serving(method: "GET", route: "/warm-up") { await Task.yield() } }.value
            try await Task.sleep(for: .milliseconds(10))
            learning += .milliseconds(10)
        }
        #expect(BlockedRequestTags.isReady, "\(BlockedRequestTags.failure ?? "still learning")")
        let readBefore = BlockedRequestTags.tagsRead
        let probe = AttributionProbe()
        let lock = Mutex(0)
        let holding = Atomic<Bool>(false)
        if kind == "lock" {
            // Held by a plain thread for longer than the threshold: the job waits for it in futex.
            Thread.detachNewThread {
                lock.withLock { _ in
                    holding.store(true, ordering: .releasing)
                    usleep(1_200_000)
                }
            }
            while !holding.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(1)) }
        }
        let blocker = Task.detached {
            await withSpan("blocker") { span in
                probe.trace.withLock { $0 = span.context.inMemorySpanContext?.traceID }
                // The async overload, as a middleware calls it; the job blocks before its first await.
                await StallAttribution.serving(method: "POST", route: "/blocked/:kind") { () async -> Void in
                    if kind == "lock" { lock.withLock { _ in } } else { usleep(1_200_000) }
                }
            }
        }
        await blocker.value
        let finalReports = try await finalPoolJobReports(in: directory)
        watchdog.stop()
        let trace = try #require(probe.trace.withLock { $0 })
        let report = try #require(finalReports.first, "\(log.events.withLock { $0.map(\.jsonLine) })")
        let request = try #require(report.request, "report \(report.id) names no request (cause \(String(describing: report.cause)))")
        #expect(request.route == "/blocked/:kind")
        #expect(request.method == "POST")
        #expect(request.traceID == trace)
        #expect(request.sampleCount > 0)
        #expect(log.allStalls.allSatisfy { $0.request == nil || $0.request?.route == "/blocked/:kind" })
        // Named through the read from outside, not by a sample a signal happened to take.
        #expect(BlockedRequestTags.tagsRead > readBefore)
        let stallSpans = tracer.finishedSpans.filter { $0.operationName == "stallwatch.stall" && $0.traceID == trace }
        #expect(stallSpans.count == 1, "\(tracer.finishedSpans.map { ($0.operationName, $0.traceID) })")
    }

    @Test("a report without a request decodes (older reports), and one with it round-trips")
    func reportCodable() throws {
        var report = StallReport(kind: .stall, id: "r1", startTimeUnixNanoseconds: 1, duration: .seconds(1),
                                 durationIsFinal: true, threadCount: 1, configuration: WatchdogConfiguration())
        let old = try JSONEncoder().encode(report)
        #expect(try JSONDecoder().decode(StallReport.self, from: old).request == nil)
        #expect(!String(decoding: old, as: UTF8.self).contains("\"request\""))
        report.request = ReportRequest(method: "GET", route: "/a/:b", traceID: "t", spanID: "s", sampleCount: 3)
        let new = try JSONDecoder().decode(StallReport.self, from: JSONEncoder().encode(report))
        #expect(new.request == report.request)
        #expect(WatchdogEvent.stall(report).summary["traceID"] == "t")
        #expect(WatchdogEvent.stall(report).summary["request"] == "GET /a/:b")
    }

    @Test("pprof samples of a stall that served a request carry its route, method and ids as labels")
    func pprofLabels() {
        var report = StallReport(kind: .stall, id: "r2", startTimeUnixNanoseconds: 1, duration: .seconds(1),
                                 durationIsFinal: true, sampleCount: 1,
                                 callTree: [ReportCallTreeNode(parent: -1, address: 0x1000, symbol: "f", count: 1, selfCount: 1)],
                                 threadCount: 1, configuration: WatchdogConfiguration())
        func strings(_ r: StallReport) -> String {
            String(decoding: PprofEncoder.encode(StallProfile(reports: [r])), as: UTF8.self)
        }
        #expect(!strings(report).contains("trace_id"))
        report.request = ReportRequest(method: "GET", route: "/a/:b", traceID: "4bf92f3577b34da6", spanID: "00f067aa")
        let text = strings(report)
        for s in ["http.route", "/a/:b", "http.method", "trace_id", "4bf92f3577b34da6", "span_id", "00f067aa"] {
            #expect(text.contains(s), "\(s)")
        }
    }
}

/// The final pool-job stall reports stored in `directory`, waited for up to 10 s. Awaited, never
/// blocking: a blocked test body would be a pool-job stall of its own.
func finalPoolJobReports(in directory: String) async throws -> [StallReport] {
    func finalReports() -> [StallReport] {
        storedReports(directory).filter { $0.kind == .stall && $0.loopName == PoolJobWatcher.loopName && $0.durationIsFinal }
    }
    var waited = Duration.zero
    while finalReports().isEmpty && waited < .seconds(10) {
        try await Task.sleep(for: .milliseconds(50))
        waited += .milliseconds(50)
    }
    return finalReports()
}
