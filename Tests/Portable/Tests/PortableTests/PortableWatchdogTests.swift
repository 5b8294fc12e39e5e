import Dispatch
import Foundation
import Logging
import Stallwatch
import Testing

/// A watchdog where nothing samples: it starts, says once what it goes without, and still reports
/// the stalls its probes show, without stacks. Run only against a build with the Linux-only parts
/// off (scripts/portable-check.sh); against a Linux build the first expectation fails.
@Suite("Watchdog without the sampler", .serialized)
struct PortableWatchdogTests {
    static let threshold = Duration.milliseconds(200)

    /// The sentence the README documents for `start()` where nothing samples: its quoted line
    /// after "On any other platform", read from the README itself so the two cannot drift.
    static func documentedMessage() throws -> String {
        let readme = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let marker = try #require(lines.firstIndex { $0.contains("<!-- start() where nothing samples -->") })
        let quoted = try #require(lines[(marker + 1)...].first { $0.hasPrefix("> ") })
        return String(quoted.dropFirst(2))
    }

    @Test func startSaysOnceWhatIsNotAvailable() throws {
        let events = EventLog()
        let lines = LogLines()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: Self.threshold),
                                    logger: Logger(label: "portable") { _ in lines.handler() }, metrics: nil) {
            events.append($0)
        }
        try watchdog.start()
        try watchdog.start() // idempotent: no second message
        Thread.sleep(forTimeInterval: 0.5)
        watchdog.stop()

        let documented = try Self.documentedMessage()
        #expect(events.errors == [documented])
        #expect(lines.errors.filter { $0.contains(documented) }.count == 1)
        #expect(lines.errors.count == 1, "other error lines: \(lines.errors)")
    }

    @Test func heartbeatStallIsReportedWithoutAStack() throws {
        let events = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: Self.threshold, watchPoolJobs: false),
                                    metrics: nil) { events.append($0) }
        let probe = watchdog.makeProbe(name: "portable-loop")
        try watchdog.start()
        defer { watchdog.stop() }
        let loop = Thread {
            probe.busy()
            Thread.sleep(forTimeInterval: 0.6)
            probe.idle()
        }
        loop.start()
        #expect(eventually { !events.ended.isEmpty })

        let stalls = events.stalls.filter { $0.loopName == "portable-loop" }
        let report = try #require(stalls.first)
        #expect(stalls.count == 1)
        #expect(report.blamedStack.isEmpty)
        #expect(report.sampleCount == 0)
        #expect(report.duration >= Self.threshold)
        let ended = try #require(events.ended.first)
        #expect(ended >= .milliseconds(500) && ended < .seconds(3), "stall lasted \(ended)")
    }

    @Test func pingedQueueStallIsReportedWithoutAStack() throws {
        let events = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: Self.threshold, watchPoolJobs: false),
                                    metrics: nil) { events.append($0) }
        let queue = DispatchQueue(label: "portable-queue")
        watchdog.monitor(PingProbe.dispatchQueue(queue, name: "portable-queue"))
        try watchdog.start()
        defer { watchdog.stop() }
        Thread.sleep(forTimeInterval: 0.1) // the first ping runs: the queue is known to answer
        queue.async { Thread.sleep(forTimeInterval: 0.7) }
        #expect(eventually { !events.ended.isEmpty })

        let report = try #require(events.stalls.first { $0.loopName == "portable-queue" })
        #expect(report.blamedStack.isEmpty)
        #expect(report.duration >= Self.threshold)
    }
}
