import Dispatch
import Glibc
import Logging
import StallwatchReport
import Synchronization
import Testing
@testable import Stallwatch

/// Many loops stalled at once: the watchdog runs a round every few ms, and each round's work delays
/// the first reports of the loops still waiting for theirs.
@Suite("Rounds in a storm of stalls", .serialized)
struct StormRoundTests {
    @Test("a blocked stalled loop gets one blocked stack per sampling interval, however often rounds come")
    func blockedSamplesPerInterval() throws {
        let (engine, worker) = try RoundTestEngine.withBusyLoop("storm-blocked", busyMicroseconds: 600_000)
        defer {
            engine.shutdown()
            worker.stopAndJoin()
        }
        // Rounds every 2 ms for 300 ms (about 140, as in a storm), from before suspicion on.
        let rounds = RoundTestEngine.runRounds(engine, for: .milliseconds(300), every: .milliseconds(2))
        let monitor = try #require(engine.monitors.values.first)
        let interval = WatchdogConfiguration.watchingOwnLoops(threshold: RoundTestEngine.threshold).sampleInterval
        // One per interval over 300 ms, plus the first report's fresh one.
        let most = Int(Duration.milliseconds(300) / interval) + 2
        #expect(monitor.samplesAdded >= 3 && monitor.samplesAdded <= most,
                "\(monitor.samplesAdded) blocked stacks in \(rounds) rounds (at most \(most))")
    }

    @Test("a report lists another stalled loop's thread with that loop's own newest sample, and its age")
    func stalledNeighbourFromItsSamples() throws {
        let reports = Mutex<[StallReport]>([])
        let engine = try RoundTestEngine.make { event in
            if event.kind == .stall, let report = event.report { reports.withLock { $0.append(report) } }
        }
        let probes = (0..<2).map { HeartbeatProbe(name: "storm-spin-\($0)") }
        engine.sync(probes.map { .heartbeat($0) })
        let started = DispatchSemaphore(value: 0)
        let workers = probes.enumerated().map { index, probe in
            TestThread(name: "sw-storm-\(index)") { thread in
                probe.busy()
                started.signal()
                _ = stallwatchFixtureLeafSpin(thread)
                probe.idle()
            }
        }
        for _ in workers { started.wait() }
        defer {
            engine.shutdown()
            for worker in workers { worker.stopAndJoin() }
        }
        _ = RoundTestEngine.runRounds(engine, for: .milliseconds(400), every: .milliseconds(5))
        let tids = workers.compactMap(\.tid)
        let all = reports.withLock { $0 }
        #expect(all.count == 2, "\(all.count) reports")
        // The report made second lists the first loop's thread, which was sampled well before.
        let second = try #require(all.last)
        let others = try #require(second.otherThreads, "no other threads in the report")
        let neighbour = try #require(others.first { t in tids.contains { $0.rawValue == t.thread.id && $0.rawValue != second.thread?.id } },
                                     "the other stalled loop's thread is not listed")
        let age = try #require(neighbour.stackAgeNanoseconds, "the neighbour's stack was captured anew, not taken from its samples")
        #expect(age <= UInt64(RoundTestEngine.threshold / .nanoseconds(1)))
        #expect(neighbour.frames.contains { $0.symbol?.contains("stallwatchFixtureLeafSpin") == true },
                "\(neighbour.frames.map { $0.symbol ?? "?" })")
    }
}
