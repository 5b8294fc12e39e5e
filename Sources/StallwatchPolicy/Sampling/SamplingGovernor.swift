import StallwatchReport
/// Keeps sampling inside its CPU budget when many loops are stalled at once, by stretching the
/// interval of every loop's sampling timer.
///
/// A timer on a thread's CPU clock fires once per `interval` of CPU that thread burns, so `n`
/// stalled threads are sampled at most `min(n, cores) / interval` times a second, each sample
/// costing about `costPerSample` (the stolen time `bench sampler` measures per sample). The
/// governor picks the configured interval when that fits the budget and the shortest interval
/// that does otherwise. The bound is the worst case (every sampled thread running), so it never
/// lets the budget be exceeded, at the price of sampling more sparsely than needed when some of
/// the threads wait.
package struct SamplingGovernor: Sendable, Equatable {
    /// The configured interval.
    package let baseInterval: Duration
    /// The budget as a fraction of one core (0.001 = 0.1 %); 0 for none.
    package let budget: Double
    /// What one sample costs.
    package let costPerSample: Duration
    /// Cores that can run sampled threads at the same time.
    package let cores: Int

    /// A governor; `budget` 0 turns it off.
    package init(baseInterval: Duration, budget: Double, costPerSample: Duration, cores: Int) {
        self.baseInterval = baseInterval
        self.budget = budget
        self.costPerSample = costPerSample
        self.cores = max(cores, 1)
    }

    /// The governor of a configuration on a machine with `cores` online cores.
    package init(_ configuration: WatchdogConfiguration, cores: Int) {
        self.init(baseInterval: configuration.sampleInterval, budget: configuration.samplerBudget,
                  costPerSample: configuration.sampleCost, cores: cores)
    }

    /// The interval for each of `loops` threads sampled at once, and why it is that one.
    package func interval(forSampledLoops loops: Int) -> (interval: Duration, reason: SamplingFacts.Reason) {
        guard budget > 0, loops > 0 else { return (baseInterval, .configured) }
        let running = Double(min(loops, cores))
        let needed = running * costPerSample.secondsDouble / budget
        guard needed > baseInterval.secondsDouble else { return (baseInterval, .configured) }
        // Whole milliseconds, rounded up: small changes in the loop count do not reprogram timers.
        return (.milliseconds(Int64((needed * 1000).rounded(.up))), .budget)
    }

    /// The CPU, as a fraction of one core, that `loops` sampled threads cost at `interval`, worst case.
    package func worstCaseCost(loops: Int, interval: Duration) -> Double {
        guard loops > 0, interval > .zero else { return 0 }
        return Double(min(loops, cores)) * costPerSample.secondsDouble / interval.secondsDouble
    }
}
