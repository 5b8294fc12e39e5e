import Dispatch
import Foundation
import Glibc
import StallwatchReport
import Testing
@testable import Stallwatch

/// A pinged loop learns its thread from the first ping that runs on it. A service that starts
/// serving right after `monitor` raced the watchdog's first round: a request that stalled a loop
/// before any ping ran on it was dropped without a word (the stall matrix's "first stall after
/// start" on Vapor missed 4 of 12 at 15 ms after listening).
@Suite("First ping", .serialized)
struct FirstPingTests {
    @Test("monitor posts the first ping at once: the loop's thread is known before the watchdog starts")
    func monitorPingsAtOnce() throws {
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(300)), metrics: nil)
        let queue = DispatchQueue(label: "sw-first-ping")
        let ran = DispatchSemaphore(value: 0)
        let probe = PingProbe(name: "first") { job in
            queue.async {
                job()
                ran.signal()
            }
        }
        watchdog.monitor(probe)
        // Never started: only `monitor` can have posted this ping.
        #expect(ran.wait(timeout: .now() + 2) == .success, "no ping ran after monitor")
        #expect(probe.thread != nil)
        // Monitoring it again posts nothing more.
        watchdog.monitor(probe)
        #expect(ran.wait(timeout: .now() + .milliseconds(200)) == .timedOut)
    }

    @Test("a loop stalled before any ping ran on it is reported once, without a thread, stack or cause")
    func stalledBeforeAnyPing() throws {
        let log = EventLog()
        let threshold = Duration.milliseconds(300)
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: threshold), metrics: nil) { log.append($0) }
        let queue = DispatchQueue(label: "sw-stalled-before-ping")
        let timing = StallTiming()
        let stalling = DispatchSemaphore(value: 0)
        queue.async {
            timing.begin()
            stalling.signal()
            stallwatchFixtureSleep(microseconds: 900_000)
            timing.finish()
        }
        stalling.wait()
        let probe = PingProbe(name: "stalled-first") { job in queue.async(execute: job) }
        watchdog.monitor(probe)
        try watchdog.start()
        defer { watchdog.stop() }
        #expect(eventually(timeout: .seconds(3)) { log.ended.count >= 1 })
        let reports = log.stalls
        #expect(reports.count == 1, "\(reports.map { ($0.loopName ?? "", $0.cause?.kind.rawValue ?? "") })")
        let report = try #require(reports.first)
        #expect(report.loopName == "stalled-first")
        #expect(report.thread == nil)
        #expect(report.cause?.kind == .unknown)
        #expect(report.cause?.evidence.contains("thread is not known") == true, "\(report.cause?.evidence ?? "")")
        // Dated from the ping posted at `monitor`: the stall had begun a moment before.
        let start = try #require(timing.start)
        let startError = report.startTimeUnixNanoseconds - MonotonicClock.unixNanoseconds(ofMonotonic: start)
        #expect(startError >= 0 && startError < 100_000_000, "start \(startError / 1_000_000) ms after the stall began")
    }
}
