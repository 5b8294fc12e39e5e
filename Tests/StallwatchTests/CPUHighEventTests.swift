import CSampler
import Foundation
import StallwatchReport
import Testing
@testable import Stallwatch

@Suite("CPU-high events", .serialized)
struct CPUHighEventTests {
    @Test("a CPU-high event names the thread that made it, by name")
    func eventNamesTheBusiestThread() throws {
        let log = EventLog()
        var configuration = WatchdogConfiguration.watchingOwnLoops(threshold: .seconds(2))
        // High at a hundredth of a core: the reading after the watchdog's first makes the event,
        // however loaded the machine (a bound on how much CPU the test gets would not hold in CI).
        // Before, that first event named no thread: per-thread times were taken only once busy.
        configuration.cpu = CPUConfiguration(processHighFraction: 0.01 / Double(OnlineCPUs.count))
        let hog = TestThread(name: "sw-cpu-hog") { t in
            _ = sw_thread_set_name("sw-cpu-hog")
            var x: UInt64 = 1
            while !t.shouldStop { for _ in 0..<100_000 { x = x &* 6364136223846793005 &+ 1 } }
            t.counter.store(Int(truncatingIfNeeded: x), ordering: .relaxed)
        }
        defer { hog.stopAndJoin() }
        let watchdog = try Watchdog(configuration: configuration) { log.append($0) }
        try watchdog.start()
        defer { watchdog.stop() }
        func cpuHigh() -> StallReport? {
            log.events.withLock { $0.first { $0.kind == .cpu && $0.report?.kind == .cpuHigh }?.report }
        }
        #expect(eventually(timeout: .seconds(8)) { cpuHigh() != nil }, "no CPU-high event in 8 s of a spinning thread")
        let report = try #require(cpuHigh())
        let named = report.threadCPU.map { "\($0.thread.id) \($0.thread.name) \(Int($0.cpuPercent)) %" }
        #expect(report.threadCPU.contains { $0.thread.id == hog.tid?.rawValue && $0.thread.name == "sw-cpu-hog" && $0.cpuPercent > 10 },
                "\(report.cause?.evidence ?? ""); the event's threads: \(named); the spinning thread \(hog.tid?.rawValue ?? 0)")
        // Only the named threads are read for their names: every entry has one.
        #expect(report.threadCPU.allSatisfy { !$0.thread.name.isEmpty }, "\(named)")
    }
}
