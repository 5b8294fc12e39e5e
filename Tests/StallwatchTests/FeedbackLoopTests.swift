import Glibc
import MetricsTestKit
import StallwatchPolicy
import StallwatchReport
import Testing
@testable import Stallwatch

@Suite("Feedback loops", .serialized)
struct FeedbackLoopTests {
    @Test("one key handled 500 times in one busy period: one feedbackLoop report naming the key and the call that crossed")
    func keyOverThreshold() throws {
        let log = EventLog()
        let backend = TestMetrics()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .seconds(2)),
                                    metrics: try WatchdogMetrics(factory: backend)) { log.append($0) }
        let probe = watchdog.makeProbe(name: "render-loop")
        let renders = probe.counter(for: "render:/users")
        try watchdog.start()
        defer { watchdog.stop() }
        let worker = TestThread(name: "sw-feedback") { _ in
            probe.busy()
            for _ in 0..<500 { stallwatchFixtureRenderAgain(renders) }
            probe.idle()
        }
        worker.stopAndJoin(timeout: .seconds(10))
        #expect(eventually(timeout: .seconds(3)) { !log.feedbackLoops.isEmpty })
        usleep(300_000)
        let reports = log.feedbackLoops
        #expect(reports.count == 1, "one report per key per busy period, got \(reports.count)")
        let report = try #require(reports.first)
        #expect(report.kind == .feedbackLoop)
        #expect(report.feedback == FeedbackFacts(key: "render:/users", count: 100, threshold: 100))
        #expect(report.loopName == "render-loop")
        let names = report.blamedStack.compactMap(\.symbol)
        #expect(names.contains { $0.contains("stallwatchFixtureRenderAgain") }, "\(names)")
        #expect(log.stalls.isEmpty, "a busy period under the threshold is no stall")
        #expect(backend.counterTotal(label: "stallwatch_feedback_loops_total") == 1)
    }

    @Test("a key handled 50 times per busy period, over 40 busy periods: healthy, never reported")
    func healthyLoop() throws {
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .seconds(2))) { log.append($0) }
        let probe = watchdog.makeProbe(name: "healthy-loop")
        let renders = probe.counter(for: "render:/users")
        try watchdog.start()
        defer { watchdog.stop() }
        let worker = TestThread(name: "sw-feedback") { _ in
            for _ in 0..<40 {
                probe.busy()
                for _ in 0..<50 { stallwatchFixtureRenderAgain(renders) }
                probe.idle()
                usleep(5_000)
            }
        }
        worker.stopAndJoin(timeout: .seconds(10))
        usleep(400_000)
        #expect(log.feedbackLoops.isEmpty, "\(log.feedbackLoops.map(\.feedback))")
        #expect(renders.currentCount <= 50)
    }

    @Test("counters: the same key gives the same counter, a new threshold a new one")
    func counterIdentity() throws {
        let probe = HeartbeatProbe(name: "p")
        #expect(probe.counter(for: "a") === probe.counter(for: "a"))
        #expect(probe.counter(for: "a") !== probe.counter(for: "b"))
        #expect(probe.counter(for: "a", threshold: 5).threshold == 5)
    }
}

@inline(never)
func stallwatchFixtureRenderAgain(_ counter: FeedbackCounter) {
    counter.hit()
}

extension EventLog {
    var feedbackLoops: [StallReport] {
        events.withLock { $0.compactMap { $0.kind == .feedbackLoop ? $0.report : nil } }
    }
}
