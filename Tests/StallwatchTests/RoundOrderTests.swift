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
    /// An engine (no thread of its own: the test runs its rounds) watching one heartbeat loop, and
    /// the loop's thread, busy from when this returns for `busyMicroseconds`.
    func engineWithBusyLoop(_ name: String, busyMicroseconds: UInt32,
                            onEvent: @escaping (WatchdogEvent) -> Void = { _ in }) throws -> (WatchdogEngine, TestThread) {
        let engine = WatchdogEngine(configuration: .watchingOwnLoops(threshold: .milliseconds(100)), sampler: try StackSampler(),
                                    writer: nil, logger: Logger(label: "round-order"), metrics: nil, emit: onEvent)
        let probe = HeartbeatProbe(name: name)
        engine.sync([.heartbeat(probe)])
        let started = DispatchSemaphore(value: 0)
        let worker = TestThread(name: "sw-round-order") { _ in
            probe.busy()
            started.signal()
            stallwatchFixtureSleep(microseconds: busyMicroseconds)
            probe.idle()
        }
        started.wait()
        return (engine, worker)
    }

    @Test("a loop reported in a round's first pass is not stepped again in its second")
    func reportedLoopSteppedOnce() throws {
        let events = Mutex<[WatchdogEvent]>([])
        let (engine, worker) = try engineWithBusyLoop("stepped-once", busyMicroseconds: 500_000) { event in
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
        let (engine, worker) = try engineWithBusyLoop("evidence-period", busyMicroseconds: 600_000)
        defer {
            engine.shutdown()
            worker.stopAndJoin()
        }
        // Rounds every 2 ms from suspicion (50 ms) to 330 ms: about 140 of them, as in a storm.
        usleep(50_000)
        let end = ContinuousClock.now + .milliseconds(280)
        var rounds = 0
        while ContinuousClock.now < end {
            _ = engine.round()
            rounds += 1
            usleep(2_000)
        }
        let monitor = try #require(engine.monitors.values.first)
        let reads = monitor.observedStates.total
        let period = DetectionSchedule(configuration: .watchingOwnLoops(threshold: .milliseconds(100))).evidencePeriod
        // One per period over 280 ms, plus the detection round's own.
        let most = Int(Duration.milliseconds(280) / period) + 2
        #expect(reads >= 3 && reads <= most, "\(reads) reads in \(rounds) rounds (at most \(most))")
    }
}
