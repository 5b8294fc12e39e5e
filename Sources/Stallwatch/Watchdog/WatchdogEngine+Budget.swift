import StallwatchPolicy
import StallwatchReport

extension WatchdogEngine {
    /// Once a round: the interval every sampling ring should run at for the loops sampled now
    /// (``SamplingGovernor``); rings that run at another are reprogrammed.
    func governSampling() {
        // Counted in place: this runs every round, and a list of the rings would allocate.
        let ringCount = monitors.values.count { $0.ring != nil }
        let wanted = governor.interval(forSampledLoops: ringCount)
        metrics?.recordSamplingInterval(wanted.interval)
        guard wanted.interval != sampling.interval else { return }
        let rings = monitors.values.compactMap(\.ring)
        if wanted.reason == .budget || sampling.reason == .budget {
            logger.notice("sampling interval set by the CPU budget", metadata: [
                "interval": "\(wanted.interval)", "loops": "\(rings.count)",
                "budget": "\(configuration.samplerBudget * 100) % of a core"])
        }
        sampling = wanted
        for ring in rings { try? ring.setInterval(wanted.interval) }
    }

    /// The interval for a ring about to start: the governed one for one more sampled loop.
    func samplingIntervalForNewRing() -> Duration {
        let count = monitors.values.filter { $0.ring != nil }.count + 1
        let wanted = governor.interval(forSampledLoops: count)
        if wanted.interval > sampling.interval { sampling = wanted }
        return sampling.interval
    }
}
