import Dispatch
import Glibc
import Logging
@testable import Stallwatch

/// Engines without a thread of their own, for tests that run the rounds themselves.
enum RoundTestEngine {
    static let threshold = Duration.milliseconds(100)

    /// An engine watching own loops at ``threshold`` (no pool jobs, no writer).
    static func make(onEvent: @escaping (WatchdogEvent) -> Void = { _ in }) throws -> WatchdogEngine {
        WatchdogEngine(configuration: .watchingOwnLoops(threshold: threshold), sampler: try StackSampler(),
                       writer: nil, logger: Logger(label: "round-test"), metrics: nil, emit: onEvent)
    }

    /// An engine watching one heartbeat loop, and the loop's thread, blocked (busy) from when this
    /// returns for `busyMicroseconds`.
    static func withBusyLoop(_ name: String, busyMicroseconds: UInt32,
                             onEvent: @escaping (WatchdogEvent) -> Void = { _ in }) throws -> (WatchdogEngine, TestThread) {
        let engine = try make(onEvent: onEvent)
        let probe = HeartbeatProbe(name: name)
        engine.sync([.heartbeat(probe)])
        let started = DispatchSemaphore(value: 0)
        let worker = TestThread(name: "sw-round-test") { _ in
            probe.busy()
            started.signal()
            stallwatchFixtureSleep(microseconds: busyMicroseconds)
            probe.idle()
        }
        started.wait()
        return (engine, worker)
    }

    /// Runs a round every `every` for `duration`, as the watchdog does in a storm; returns how many.
    static func runRounds(_ engine: WatchdogEngine, for duration: Duration, every: Duration) -> Int {
        let end = ContinuousClock.now + duration
        var rounds = 0
        while ContinuousClock.now < end {
            _ = engine.round()
            rounds += 1
            usleep(UInt32(every / .microseconds(1)))
        }
        return rounds
    }
}
