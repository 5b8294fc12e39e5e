import CSampler
import Foundation
import StallwatchReport
import Testing
@testable import Stallwatch

@Suite("CPU-high events", .serialized)
struct CPUHighEventTests {
    @Test("the first CPU-high event of a process that turns busy names its busiest thread, by name")
    func firstEventNamesTheBusiestThread() throws {
        let log = EventLog()
        var configuration = WatchdogConfiguration.watchingOwnLoops(threshold: .seconds(2))
        // High at half a core, whatever the machine: one spinning thread crosses it.
        configuration.cpu = CPUConfiguration(processHighFraction: 0.5 / Double(OnlineCPUs.count))
        let watchdog = try Watchdog(configuration: configuration) { log.append($0) }
        try watchdog.start()
        defer { watchdog.stop() }
        // Idle first, so the process turns busy between two of the watchdog's readings.
        usleep(1_200_000)
        let hog = TestThread(name: "sw-cpu-hog") { t in
            _ = sw_thread_set_name("sw-cpu-hog")
            var x: UInt64 = 1
            while !t.shouldStop { for _ in 0..<100_000 { x = x &* 6364136223846793005 &+ 1 } }
            t.counter.store(Int(truncatingIfNeeded: x), ordering: .relaxed)
        }
        defer { hog.stopAndJoin() }
        func cpuHigh() -> StallReport? {
            log.events.withLock { $0.first { $0.kind == .cpu && $0.report?.kind == .cpuHigh }?.report }
        }
        #expect(eventually(timeout: .seconds(8)) { cpuHigh() != nil }, "no CPU-high event in 8 s of one spinning thread")
        let report = try #require(cpuHigh())
        let named = report.threadCPU.map { "\($0.thread.name) \(Int($0.cpuPercent)) %" }
        #expect(report.threadCPU.contains { $0.thread.name == "sw-cpu-hog" && $0.thread.id == hog.tid?.rawValue && $0.cpuPercent > 30 },
                "the event's threads: \(named)")
        // Only the named threads are read for their names: every entry has one.
        #expect(report.threadCPU.allSatisfy { !$0.thread.name.isEmpty }, "\(named)")
    }
}
