import Dispatch
import Glibc
import Logging
import StallwatchPolicy
import Synchronization
import Testing
@testable import Stallwatch

/// A round steps loops awaiting detection first, then the rest: each loop once.
@Suite("A round steps each loop once", .serialized)
struct RoundOrderTests {
    @Test("a loop reported in a round's first pass is not stepped again in its second")
    func reportedLoopSteppedOnce() throws {
        let events = Mutex<[WatchdogEvent]>([])
        let (engine, worker) = try RoundTestEngine.withBusyLoop("stepped-once", busyMicroseconds: 500_000) { event in
            events.withLock { $0.append(event) }
        }
        defer {
            engine.shutdown()
            worker.stopAndJoin()
        }
        usleep(200_000)  // past the threshold with no round yet: the loop awaits detection
        _ = engine.round()
        let monitor = try #require(engine.monitors.values.first)
        #expect(events.withLock { $0.filter { $0.kind == .stall }.count } == 1)
        // Stepped twice, the detection round would have gathered its evidence twice.
        #expect(monitor.observedStates.total == 1, "\(monitor.observedStates.counts)")
    }

    @Test("a stalled loop's thread is read for evidence at most once per look period, however often rounds come")
    func evidenceOncePerPeriod() throws {
        let (engine, worker) = try RoundTestEngine.withBusyLoop("evidence-period", busyMicroseconds: 600_000)
        defer {
            engine.shutdown()
            worker.stopAndJoin()
        }
        // Rounds every 2 ms from suspicion (50 ms) to 330 ms: about 140 of them, as in a storm.
        usleep(50_000)
        let rounds = RoundTestEngine.runRounds(engine, for: .milliseconds(280), every: .milliseconds(2))
        let monitor = try #require(engine.monitors.values.first)
        let reads = monitor.observedStates.total
        let period = DetectionSchedule(configuration: .watchingOwnLoops(threshold: RoundTestEngine.threshold)).evidencePeriod
        // One per period over 280 ms, plus the detection round's own.
        let most = Int(Duration.milliseconds(280) / period) + 2
        #expect(reads >= 3 && reads <= most, "\(reads) reads in \(rounds) rounds (at most \(most))")
    }
}
