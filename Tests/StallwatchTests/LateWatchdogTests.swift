import Foundation
import Glibc
import StallwatchReport
import Synchronization
import Testing
@testable import Stallwatch

/// A stall that begins and ends while the watchdog cannot look (starved of CPU, or held up, here by
/// a slow event handler on its thread) is still reported: once, final, with its recorded length.
@Suite("Stalls the watchdog saw only after they ended", .serialized)
struct LateWatchdogTests {
    /// Set as the event handler begins holding the watchdog.
    final class Holding: Sendable {
        let started = Atomic<Bool>(false)
        var now: Bool { started.load(ordering: .acquiring) }
    }

    /// A watchdog at a 300 ms threshold whose event handler, at the first stall of the loop
    /// "holder", sleeps `hold` on the watchdog's thread.
    private func heldWatchdog(hold: UInt32, directory: String? = nil, log: EventLog,
                              holding: Holding) throws -> Watchdog {
        try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(300)),
                     reportDirectory: directory, metrics: nil) { event in
            log.append(event)
            if event.kind == .stall, event.report?.loopName == "holder", !holding.now {
                holding.started.store(true, ordering: .releasing)
                usleep(hold)
            }
        }
    }

    @Test("a stall wholly inside a slow event handler: one report, final, start and duration right, lateness stated")
    func stallWhileTheWatchdogIsHeld() throws {
        let directory = temporaryDirectory("late")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = EventLog()
        let holding = Holding()
        // The handler runs on the watchdog thread: 1.5 s in it is 1.5 s without a round.
        let watchdog = try heldWatchdog(hold: 1_500_000, directory: directory, log: log, holding: holding)
        let holder = watchdog.makeProbe(name: "holder")
        let unseen = watchdog.makeProbe(name: "unseen")
        try watchdog.start()
        defer { watchdog.stop() }
        let holderTiming = StallTiming()
        let holderThread = TestThread(name: "sw-holder") { _ in
            holder.busy()
            holderTiming.begin()
            usleep(2_000_000)
            holderTiming.finish()
            holder.idle()
        }
        let timing = StallTiming()
        let unseenThread = TestThread(name: "sw-unseen") { _ in
            while !holding.now { usleep(1000) }
            unseen.busy()
            timing.begin()
            usleep(600_000)
            timing.finish()
            unseen.idle()
        }
        unseenThread.stopAndJoin(timeout: .seconds(10))
        holderThread.stopAndJoin(timeout: .seconds(10))
        #expect(eventually(timeout: .seconds(4)) { log.ended.count >= 2 })
        watchdog.stop()
        let events = log.stalls.filter { $0.loopName == "unseen" }
        #expect(events.count == 1, "stall events for the unseen loop: \(events.count)")
        let stored = storedReports(directory).filter { $0.kind == .stall && $0.loopName == "unseen" }
        #expect(stored.count == 1, "\(stored.map { ($0.id, $0.sequenceInStall, $0.durationIsFinal) })")
        let report = try #require(stored.first)
        #expect(report.id == events.first?.id)
        #expect(report.durationIsFinal)
        let start = try #require(timing.start), duration = try #require(timing.duration)
        expectStart(of: report, at: start)
        expectDuration(of: report, is: duration)
        // Decided about 1.5 s after its threshold: said, not hidden.
        #expect(report.watchdogLatenessNanoseconds > 500_000_000, "lateness \(report.watchdogLatenessNanoseconds / 1_000_000) ms")
        #expect(report.cause?.evidence.contains("seen only after it ended") == true, "\(report.cause?.evidence ?? "")")
        // The time the handler held the watchdog is no stop of the process: the holder's stall
        // keeps its whole length (the handler's 1.5 s were taken off it before).
        let held = try #require(storedReports(directory).first { $0.kind == .stall && $0.loopName == "holder" })
        #expect(held.durationIsFinal)
        expectDuration(of: held, is: try #require(holderTiming.duration))
    }

    @Test("a short busy period inside a slow event handler is no stall")
    func shortPeriodWhileTheWatchdogIsHeld() throws {
        let log = EventLog()
        let holding = Holding()
        let watchdog = try heldWatchdog(hold: 1_200_000, log: log, holding: holding)
        let holder = watchdog.makeProbe(name: "holder")
        let short = watchdog.makeProbe(name: "short")
        try watchdog.start()
        defer { watchdog.stop() }
        let holderThread = TestThread(name: "sw-holder") { _ in
            holder.busy()
            usleep(1_500_000)
            holder.idle()
        }
        let shortThread = TestThread(name: "sw-short") { _ in
            while !holding.now { usleep(1000) }
            for _ in 0..<3 {
                short.busy()
                usleep(200_000)
                short.idle()
                usleep(20_000)
            }
        }
        shortThread.stopAndJoin(timeout: .seconds(10))
        holderThread.stopAndJoin(timeout: .seconds(10))
        #expect(eventually(timeout: .seconds(4)) { !log.ended.isEmpty })
        usleep(400_000)
        #expect(log.stalls.filter { $0.loopName == "short" }.isEmpty)
    }
}
