import Foundation
import Glibc
import StallwatchPolicy
import StallwatchReport
import Synchronization
import Testing
@testable import Stallwatch

@inline(never)
func poolFixtureBlockingSleep(milliseconds: Int) {
    usleep(UInt32(milliseconds) * 1000)
}

@inline(never)
func poolFixtureSpin(milliseconds: Int) -> UInt64 {
    let end = ContinuousClock.now + .milliseconds(milliseconds)
    var x: UInt64 = 1
    while ContinuousClock.now < end {
        for _ in 0..<1000 { x = x &* 6364136223846793005 &+ 1442695040888963407 }
    }
    return x
}

/// One job that holds a cooperative pool thread, while the rest of the pool keeps answering: the
/// stall the pool's ping never sees. The test bodies await (never block) so that only the fixture's
/// job holds a pool thread.
@Suite("Pool jobs", .serialized)
struct PoolJobTests {
    func watch(threshold: Duration = .milliseconds(300), _ body: () async throws -> Void) async throws -> EventLog {
        let log = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: threshold)) { log.append($0) }
        let ping = PingProbe.cooperativePool()
        watchdog.monitor(ping)
        try watchdog.start()
        defer { watchdog.stop() }
        try await body()
        return log
    }

    func names(_ r: StallReport) -> [String] { r.blamedStack.compactMap(\.symbol) }

    @Test("a pool job blocked in usleep: one report under cooperative-pool-job, naming the job's function, cause sleeping")
    func blockedJob() async throws {
        let log = try await watch {
            let job = Task.detached { poolFixtureBlockingSleep(milliseconds: 1200) }
            await job.value
            try await Task.sleep(for: .milliseconds(300))
        }
        let reports = log.allStalls(through: "poolFixtureBlockingSleep").job
        #expect(reports.count == 1, "\(reports.map { ($0.loopName ?? "", $0.thread?.id ?? 0, $0.sequenceInStall, $0.startTimeUnixNanoseconds, names($0).prefix(8)) })")
        let report = try #require(reports.first)
        #expect(report.loopName == PoolJobWatcher.loopName)
        #expect(report.cause?.kind == .sleeping, "\(report.cause?.evidence ?? "")")
        #expect(names(report).contains { $0.contains("poolFixtureBlockingSleep") }, "\(names(report))")
        #expect(names(report).contains { $0.contains("swift_job_run") })
        // One end of at least the job's 1.2 s, 300 ms of it before the threshold.
        #expect(log.ended.filter { $0 >= .milliseconds(900) }.count == 1, "ended after \(log.ended)")
    }

    @Test("a CPU-bound pool job: one report, cause CPU-bound, naming the spinning function")
    func cpuJob() async throws {
        let contention = MachineContention()
        let log = try await watch {
            let job = Task.detached { poolFixtureSpin(milliseconds: 1200) }
            _ = await job.value
            try await Task.sleep(for: .milliseconds(300))
        }
        let others = contention.otherCores
        let reports = log.allStalls(through: "poolFixtureSpin").job
        #expect(reports.count == 1, "\(reports.map { ($0.loopName ?? "", $0.thread?.id ?? 0, $0.sequenceInStall, $0.startTimeUnixNanoseconds, names($0).prefix(8)) })")
        let report = try #require(reports.first)
        #expect(report.loopName == PoolJobWatcher.loopName)
        // Starved is the right verdict when other processes took the CPU (a build beside the test
        // took half of it once); on a machine they leave alone, the spin is CPU-bound.
        let starvedByOthers = report.cause?.kind == .starved && others >= 0.5
        #expect(report.cause?.kind == .cpuBound || starvedByOthers,
                "\(report.cause?.evidence ?? ""); other processes used \(String(format: "%.2f", others)) cores")
        #expect(names(report).contains { $0.contains("poolFixtureSpin") }, "\(names(report))")
    }

    @Test("thousands of short jobs and awaiting tasks are never reported")
    func shortJobs() async throws {
        let log = try await watch {
            for _ in 0..<15 {
                await withTaskGroup(of: UInt64.self) { group in
                    for _ in 0..<2000 { group.addTask { poolFixtureSpin(milliseconds: 0) } }
                    for _ in 0..<50 { group.addTask { try? await Task.sleep(for: .milliseconds(40)); return 0 } }
                    for await _ in group {}
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        #expect(log.allStalls.isEmpty, "\(log.allStalls.map { ($0.loopName ?? "", names($0).prefix(5)) })")
    }

    @Test("pool watching can be turned off")
    func turnedOff() async throws {
        let log = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(300), watchPoolJobs: false)) {
            log.append($0)
        }
        try watchdog.start()
        defer { watchdog.stop() }
        await Task.detached { poolFixtureBlockingSleep(milliseconds: 900) }.value
        #expect(log.allStalls.isEmpty)
    }
}
