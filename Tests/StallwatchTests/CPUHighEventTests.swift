import CSampler
import Foundation
import StallwatchReport
import Testing
@testable import Stallwatch

@Suite("CPU-high events", .serialized)
struct CPUHighEventTests {
    @Test("a CPU-high event names its busiest threads, by name, even threads born since the last reading")
    func eventNamesTheBusiestThreads() throws {
        let log = EventLog()
        var configuration = WatchdogConfiguration.watchingOwnLoops(threshold: .seconds(2))
        // High at 1.5 cores, whatever the machine: two spinning threads cross it, one busy thread
        // of the test process (an ASan-slowed start-up took a core for a second) does not.
        configuration.cpu = CPUConfiguration(processHighFraction: 1.5 / Double(OnlineCPUs.count))
        let watchdog = try Watchdog(configuration: configuration) { log.append($0) }
        try watchdog.start()
        defer { watchdog.stop() }
        // The watchdog's first reading comes first: the hogs are born after it, with no time of
        // theirs at it (the first event named no thread when only threads seen before counted).
        usleep(300_000)
        let hogs = (0..<2).map { i in
            TestThread(name: "sw-cpu-hog-\(i)") { t in
                _ = sw_thread_set_name("sw-cpu-hog-\(i)")
                var x: UInt64 = 1
                while !t.shouldStop { for _ in 0..<100_000 { x = x &* 6364136223846793005 &+ 1 } }
                t.counter.store(Int(truncatingIfNeeded: x), ordering: .relaxed)
            }
        }
        defer { for hog in hogs { hog.stopAndJoin() } }
        func cpuHigh() -> StallReport? {
            log.events.withLock { $0.first { $0.kind == .cpu && $0.report?.kind == .cpuHigh }?.report }
        }
        #expect(eventually(timeout: .seconds(8)) { cpuHigh() != nil }, "no CPU-high event in 8 s of two spinning threads")
        let report = try #require(cpuHigh())
        let named = report.threadCPU.map { "\($0.thread.id) \($0.thread.name) \(Int($0.cpuPercent)) %" }
        let hogIDs = hogs.compactMap { $0.tid?.rawValue }
        #expect(report.threadCPU.contains { hogIDs.contains($0.thread.id) && $0.thread.name.hasPrefix("sw-cpu-hog") && $0.cpuPercent > 30 },
                "\(report.cause?.evidence ?? ""); the event's threads: \(named); hogs \(hogIDs)")
        // Only the named threads are read for their names: every entry has one.
        #expect(report.threadCPU.allSatisfy { !$0.thread.name.isEmpty }, "\(named)")
    }
}
