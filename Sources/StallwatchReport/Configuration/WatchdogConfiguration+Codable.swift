// Durations are coded as integer nanoseconds under `...Nanoseconds` keys: Swift's own `Duration`
// coding is an opaque pair of integers that no other tool can read. Missing keys decode to the
// defaults, so a configuration file only needs the fields it changes.

extension WatchdogConfiguration: Codable {
    private enum CodingKeys: String, CodingKey {
        case thresholdNanoseconds, checkPeriodNanoseconds, sampleIntervalNanoseconds
        case ringCapacity, maxFrames, threadCountCutoff, suspensionLimitNanoseconds
        case reportCapPerWindow, reportWindowNanoseconds, sampleContinuously, suspicionFraction, cpu
        case watchPoolJobs, poolScanPeriodNanoseconds, reclaimSignal, writePprof, signalFreeSampling
        case samplerBudget, sampleCostNanoseconds, busyLoopWindowNanoseconds
    }

    /// Decodes, filling absent fields with defaults (derived ones from the decoded threshold).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = WatchdogConfiguration()
        func duration(_ key: CodingKeys) throws -> Duration? {
            try c.decodeIfPresent(Int64.self, forKey: key).map { .nanoseconds($0) }
        }
        self.init(
            threshold: try duration(.thresholdNanoseconds) ?? defaults.threshold,
            checkPeriod: try duration(.checkPeriodNanoseconds),
            sampleInterval: try duration(.sampleIntervalNanoseconds) ?? defaults.sampleInterval,
            ringCapacity: try c.decodeIfPresent(Int.self, forKey: .ringCapacity),
            maxFrames: try c.decodeIfPresent(Int.self, forKey: .maxFrames) ?? defaults.maxFrames,
            threadCountCutoff: try c.decodeIfPresent(Int.self, forKey: .threadCountCutoff) ?? defaults.threadCountCutoff,
            suspensionLimit: try duration(.suspensionLimitNanoseconds),
            reportCapPerWindow: try c.decodeIfPresent(Int.self, forKey: .reportCapPerWindow) ?? defaults.reportCapPerWindow,
            reportWindow: try duration(.reportWindowNanoseconds) ?? defaults.reportWindow,
            sampleContinuously: try c.decodeIfPresent(Bool.self, forKey: .sampleContinuously) ?? defaults.sampleContinuously,
            suspicionFraction: try c.decodeIfPresent(Double.self, forKey: .suspicionFraction) ?? defaults.suspicionFraction,
            cpu: try c.decodeIfPresent(CPUConfiguration.self, forKey: .cpu) ?? defaults.cpu,
            watchPoolJobs: try c.decodeIfPresent(Bool.self, forKey: .watchPoolJobs) ?? defaults.watchPoolJobs,
            poolScanPeriod: try duration(.poolScanPeriodNanoseconds),
            reclaimSignal: try c.decodeIfPresent(Bool.self, forKey: .reclaimSignal) ?? defaults.reclaimSignal,
            writePprof: try c.decodeIfPresent(Bool.self, forKey: .writePprof) ?? defaults.writePprof,
            samplerBudget: try c.decodeIfPresent(Double.self, forKey: .samplerBudget) ?? defaults.samplerBudget,
            sampleCost: try duration(.sampleCostNanoseconds) ?? defaults.sampleCost,
            busyLoopWindow: try duration(.busyLoopWindowNanoseconds) ?? defaults.busyLoopWindow,
            signalFreeSampling: try c.decodeIfPresent(Bool.self, forKey: .signalFreeSampling) ?? defaults.signalFreeSampling
        )
    }

    /// Encodes every field, durations as integer nanoseconds.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(threshold.clampedNanoseconds, forKey: .thresholdNanoseconds)
        try c.encode(checkPeriod.clampedNanoseconds, forKey: .checkPeriodNanoseconds)
        try c.encode(sampleInterval.clampedNanoseconds, forKey: .sampleIntervalNanoseconds)
        try c.encode(ringCapacity, forKey: .ringCapacity)
        try c.encode(maxFrames, forKey: .maxFrames)
        try c.encode(threadCountCutoff, forKey: .threadCountCutoff)
        try c.encode(suspensionLimit.clampedNanoseconds, forKey: .suspensionLimitNanoseconds)
        try c.encode(reportCapPerWindow, forKey: .reportCapPerWindow)
        try c.encode(reportWindow.clampedNanoseconds, forKey: .reportWindowNanoseconds)
        try c.encode(sampleContinuously, forKey: .sampleContinuously)
        try c.encode(suspicionFraction, forKey: .suspicionFraction)
        try c.encode(cpu, forKey: .cpu)
        try c.encode(watchPoolJobs, forKey: .watchPoolJobs)
        try c.encode(poolScanPeriod.clampedNanoseconds, forKey: .poolScanPeriodNanoseconds)
        try c.encode(reclaimSignal, forKey: .reclaimSignal)
        try c.encode(writePprof, forKey: .writePprof)
        try c.encode(samplerBudget, forKey: .samplerBudget)
        try c.encode(sampleCost.clampedNanoseconds, forKey: .sampleCostNanoseconds)
        try c.encode(busyLoopWindow.clampedNanoseconds, forKey: .busyLoopWindowNanoseconds)
        try c.encode(signalFreeSampling, forKey: .signalFreeSampling)
    }
}

extension CPUConfiguration: Codable {
    private enum CodingKeys: String, CodingKey {
        case processHighFraction, topThreadCount, topThreadMinimumFraction, sustainedStartFraction
        case sustainedAbandonRatio, sustainedMinimumDurationNanoseconds, sustainedCoolDownNanoseconds
        case maximumReadingPeriodNanoseconds
    }

    /// Decodes, filling absent fields with defaults.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = CPUConfiguration()
        func duration(_ key: CodingKeys) throws -> Duration? {
            try c.decodeIfPresent(Int64.self, forKey: key).map { .nanoseconds($0) }
        }
        self.init(
            processHighFraction: try c.decodeIfPresent(Double.self, forKey: .processHighFraction) ?? d.processHighFraction,
            topThreadCount: try c.decodeIfPresent(Int.self, forKey: .topThreadCount) ?? d.topThreadCount,
            topThreadMinimumFraction: try c.decodeIfPresent(Double.self, forKey: .topThreadMinimumFraction) ?? d.topThreadMinimumFraction,
            sustainedStartFraction: try c.decodeIfPresent(Double.self, forKey: .sustainedStartFraction) ?? d.sustainedStartFraction,
            sustainedAbandonRatio: try c.decodeIfPresent(Double.self, forKey: .sustainedAbandonRatio) ?? d.sustainedAbandonRatio,
            sustainedMinimumDuration: try duration(.sustainedMinimumDurationNanoseconds) ?? d.sustainedMinimumDuration,
            sustainedCoolDown: try duration(.sustainedCoolDownNanoseconds) ?? d.sustainedCoolDown,
            maximumReadingPeriod: try duration(.maximumReadingPeriodNanoseconds) ?? d.maximumReadingPeriod
        )
    }

    /// Encodes every field, durations as integer nanoseconds.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(processHighFraction, forKey: .processHighFraction)
        try c.encode(topThreadCount, forKey: .topThreadCount)
        try c.encode(topThreadMinimumFraction, forKey: .topThreadMinimumFraction)
        try c.encode(sustainedStartFraction, forKey: .sustainedStartFraction)
        try c.encode(sustainedAbandonRatio, forKey: .sustainedAbandonRatio)
        try c.encode(sustainedMinimumDuration.clampedNanoseconds, forKey: .sustainedMinimumDurationNanoseconds)
        try c.encode(sustainedCoolDown.clampedNanoseconds, forKey: .sustainedCoolDownNanoseconds)
        try c.encode(maximumReadingPeriod.clampedNanoseconds, forKey: .maximumReadingPeriodNanoseconds)
    }
}
