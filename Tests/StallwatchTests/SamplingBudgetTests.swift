import Glibc
import MetricsTestKit
import StallwatchPolicy
import StallwatchReport
import Synchronization
import Testing
@testable import Stallwatch

@Suite("Sampling budget", .serialized)
struct SamplingBudgetTests {
    /// `loops` heartbeat loops spinning for `seconds` at once; returns the samples taken, the
    /// wall time and the stall reports.
    func stallMany(_ loops: Int, seconds: Double, configuration: WatchdogConfiguration) throws
        -> (samples: Int64, wall: Double, reports: [StallReport]) {
        let backend = TestMetrics()
        let log = EventLog()
        let watchdog = try Watchdog(configuration: configuration, metrics: try WatchdogMetrics(factory: backend)) { log.append($0) }
        let probes = (0..<loops).map { watchdog.makeProbe(name: "loop-\($0)") }
        try watchdog.start()
        let clock = ContinuousClock()
        let start = clock.now
        let workers = probes.map { probe in
            TestThread(name: "sw-budget") { _ in
                probe.busy()
                stallwatchFixtureCPUStall(milliseconds: Int(seconds * 1000))
                probe.idle()
            }
        }
        for w in workers { w.stopAndJoin(timeout: .seconds(30)) }
        let wall = (clock.now - start).secondsDouble
        watchdog.stop()
        return (backend.counterTotal(label: "stallwatch_samples_total"), wall, log.stalls)
    }

    @Test("8 loops spinning at once with a budget of 0.01 % of a core: sampled inside it, and the reports say so")
    func lowBudget() throws {
        let configuration = WatchdogConfiguration(threshold: .milliseconds(300), watchPoolJobs: false,
                                                  samplerBudget: 0.0001)
        let (samples, wall, reports) = try stallMany(8, seconds: 3, configuration: configuration)
        let cost = Double(samples) * configuration.sampleCost.secondsDouble / wall
        #expect(cost <= configuration.samplerBudget * 1.5, "\(samples) samples in \(wall) s: \(cost * 100) % of a core")
        #expect(!reports.isEmpty)
        let stretched = reports.compactMap(\.sampling).filter { $0.reason == .budget }
        #expect(!stretched.isEmpty, "no report says the budget stretched its sampling: \(reports.map(\.sampling))")
        #expect(stretched.allSatisfy { $0.intervalNanoseconds >= 100_000_000 }, "\(stretched)")
    }

    @Test("64 loops stalled at once with the default budget: the sampler stays under 0.1 % of a core")
    func sixtyFourLoops() throws {
        let configuration = WatchdogConfiguration(threshold: .milliseconds(300), watchPoolJobs: false)
        let (samples, wall, _) = try stallMany(64, seconds: 2, configuration: configuration)
        let cost = Double(samples) * configuration.sampleCost.secondsDouble / wall
        #expect(samples > 0)
        #expect(cost <= configuration.samplerBudget, "\(samples) samples in \(wall) s: \(cost * 100) % of a core")
    }
}
