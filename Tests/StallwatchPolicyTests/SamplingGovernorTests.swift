import StallwatchReport
import Testing
@testable import StallwatchPolicy

@Suite("Sampling governor")
struct SamplingGovernorTests {
    let cost = Duration.microseconds(20)

    @Test("inside the budget: the configured interval")
    func underBudget() {
        let g = SamplingGovernor(baseInterval: .milliseconds(50), budget: 0.001, costPerSample: cost, cores: 2)
        #expect(g.interval(forSampledLoops: 1) == (.milliseconds(50), .configured))
        #expect(g.interval(forSampledLoops: 64) == (.milliseconds(50), .configured), "2 cores: at most 2 run at once")
    }

    @Test("64 loops on 64 cores at 0.1 %: stretched to 1.28 s")
    func stretched() {
        let g = SamplingGovernor(baseInterval: .milliseconds(50), budget: 0.001, costPerSample: cost, cores: 64)
        let (interval, reason) = g.interval(forSampledLoops: 64)
        #expect(reason == .budget)
        #expect(interval == .milliseconds(1280))
    }

    @Test("whatever the loops and cores, the worst case stays inside the budget")
    func neverOverBudget() {
        for cores in [1, 2, 8, 64, 256] {
            for budget in [0.0001, 0.001, 0.01] {
                let g = SamplingGovernor(baseInterval: .milliseconds(50), budget: budget, costPerSample: cost, cores: cores)
                for loops in [1, 2, 3, 7, 8, 63, 64, 200] {
                    let (interval, _) = g.interval(forSampledLoops: loops)
                    #expect(interval >= .milliseconds(50))
                    #expect(g.worstCaseCost(loops: loops, interval: interval) <= budget * 1.000001,
                            "cores \(cores) budget \(budget) loops \(loops): \(interval)")
                }
            }
        }
    }

    @Test("no budget, no loops: the configured interval")
    func off() {
        let g = SamplingGovernor(baseInterval: .milliseconds(50), budget: 0, costPerSample: cost, cores: 64)
        #expect(g.interval(forSampledLoops: 64) == (.milliseconds(50), .configured))
        let h = SamplingGovernor(baseInterval: .milliseconds(50), budget: 0.001, costPerSample: cost, cores: 64)
        #expect(h.interval(forSampledLoops: 0) == (.milliseconds(50), .configured))
    }

    @Test("a budget outside 0...1 or a cost of zero is refused, naming the field")
    func validation() {
        #expect(throws: ConfigurationError.self) { try WatchdogConfiguration(samplerBudget: 2).validated() }
        #expect(throws: ConfigurationError.self) { try WatchdogConfiguration(samplerBudget: -0.1).validated() }
        #expect(throws: ConfigurationError.self) { try WatchdogConfiguration(samplerBudget: .nan).validated() }
        #expect(throws: ConfigurationError.self) { try WatchdogConfiguration(sampleCost: .zero).validated() }
        do {
            _ = try WatchdogConfiguration(samplerBudget: 2).validated()
        } catch {
            #expect(error.field == "samplerBudget")
        }
    }
}

@Suite("Busy-loop detector")
struct BusyLoopDetectorTests {
    func sample(_ names: [UInt64]) -> StackSample {
        StackSample(frames: names.reversed().map { FrameKey(pc: $0, functionStart: $0) })
    }

    func run(_ samples: [StackSample], busy: Bool = true) -> [BusyLoopDetector.Verdict] {
        var d = BusyLoopDetector(window: .seconds(2), lateLatency: .milliseconds(125))
        var now = MonotonicInstant(nanoseconds: 1_000_000_000)
        return samples.map { s in
            now = now + .milliseconds(500)
            return d.observe(now: now, demand: busy ? .milliseconds(490) : .milliseconds(200), wall: .milliseconds(500),
                             pingLatency: .milliseconds(1), sample: s)
        }
    }

    @Test("the same deep stack for 2 s of a busy thread: reported once")
    func recurring() {
        let same = (0..<8).map { _ in sample([1, 2, 3, 4, 5, 6, 7, 8]) }
        let verdicts = run(same)
        #expect(verdicts.filter { if case .report = $0 { true } else { false } }.count == 1)
    }

    @Test("varied work under shared loop frames: busy, never reported")
    func varied() {
        let varied = (0..<8).map { i in sample([1, 2, 3, 100 + UInt64(i), 200 + UInt64(i), 300 + UInt64(i), 400, 500]) }
        #expect(run(varied).allSatisfy { $0 == .busy })
    }

    @Test("a thread at 40 % of a core with answered pings is quiet")
    func quiet() {
        let same = (0..<8).map { _ in sample([1, 2, 3, 4, 5, 6, 7, 8]) }
        #expect(run(same, busy: false).allSatisfy { $0 == .quiet })
    }
}
