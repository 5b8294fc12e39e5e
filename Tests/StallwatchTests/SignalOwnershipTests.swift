import Foundation
import Glibc
import StallwatchPolicy
import StallwatchReport
import Synchronization
import MetricsTestKit
import Testing
@testable import Stallwatch

let foreignProfSignals = Atomic<Int>(0)

/// Installs a handler for SIGPROF the way another profiler would (no chaining), runs `body`, and
/// gives the signal back to Stallwatch afterwards so later tests sample as usual.
func withForeignProfHandler(_ body: () throws -> Void) rethrows {
    var sa = sigaction()
    sa.__sigaction_handler.sa_sigaction = { _, _, _ in foreignProfSignals.add(1, ordering: .relaxed) }
    sa.sa_flags = SA_SIGINFO
    sigemptyset(&sa.sa_mask)
    sigaction(SIGPROF, &sa, nil)
    defer { _ = try? StackSampler().reclaimSignal() }
    try body()
}

@Suite("Signal ownership", .serialized)
struct SignalOwnershipTests {
    @Test("the sampler says who owns the signal")
    func ownership() throws {
        let sampler = try StackSampler()
        #expect(sampler.signalOwnership == .ours)
        withForeignProfHandler {
            #expect(sampler.signalOwnership == .replaced)
        }
        #expect(sampler.signalOwnership == .ours)
    }

    @Test("a handler installed after the watchdog started: one error event, and a CPU stall is still reported")
    func takenOver() throws {
        let log = EventLog()
        let backend = TestMetrics()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(300)),
                                    metrics: try WatchdogMetrics(factory: backend)) { log.append($0) }
        let probe = watchdog.makeProbe(name: "spin-loop")
        try watchdog.start()
        defer { watchdog.stop() }
        withForeignProfHandler {
            usleep(400_000) // at least one round notices
            stallOnce(probe, milliseconds: 900, log: log)
        }
        #expect(log.errors.count == 1, "\(log.errors)")
        #expect(log.errors.first?.contains("replaced") == true, "\(log.errors)")
        #expect(backend.counterTotal(label: "stallwatch_signal_lost_total") == 1)
        #expect(backend.counterTotal(label: "stallwatch_errors_total") == 1)
        #expect(try backend.expectGauge("stallwatch_signal_owned").values.contains(0))
        let report = try #require(log.stalls.first, "the stall went unreported once the signal was lost")
        #expect(report.cause?.kind == .cpuBound, "\(report.cause?.evidence ?? "")")
        #expect(report.cause?.evidence.contains("no stack") == true, "\(report.cause?.evidence ?? "")")
    }

    @Test("with reclaimSignal, the watchdog takes the signal back and keeps sampling")
    func reclaimed() throws {
        let log = EventLog()
        var configuration = WatchdogConfiguration.watchingOwnLoops(threshold: .milliseconds(300))
        configuration.reclaimSignal = true
        let watchdog = try Watchdog(configuration: configuration) { log.append($0) }
        let probe = watchdog.makeProbe(name: "spin-loop")
        try watchdog.start()
        defer { watchdog.stop() }
        let sampler = try StackSampler()
        withForeignProfHandler {
            // Reclaimed at a round; on a loaded machine a round may come late: waited for, not timed.
            #expect(eventually(timeout: .seconds(5)) { sampler.signalOwnership == .ours }, "never reclaimed")
            stallOnce(probe, milliseconds: 900, log: log)
        }
        #expect(log.errors.isEmpty, "\(log.errors)")
        let report = try #require(log.stalls.first)
        #expect(report.blamedStack.contains { $0.symbol?.contains("stallwatchFixtureCPUStall") == true },
                "\(report.blamedStack.compactMap(\.symbol))")
    }
}
