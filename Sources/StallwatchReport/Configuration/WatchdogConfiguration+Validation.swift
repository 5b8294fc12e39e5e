extension WatchdogConfiguration {
    /// Returns `self` if every setting can work together, else the first offending field.
    ///
    /// Checked: positive durations; the sample interval and check period fit inside the
    /// threshold; the suspension limit exceeds a normal round; counts are at least 1; fractions
    /// lie in (0, 1] (NaN rejected).
    public func validated() throws(ConfigurationError) -> Self {
        try Self.requirePositive("threshold", threshold)
        try Self.requirePositive("checkPeriod", checkPeriod)
        try Self.requirePositive("sampleInterval", sampleInterval)
        try Self.requirePositive("suspensionLimit", suspensionLimit)
        try Self.requirePositive("reportWindow", reportWindow)
        try Self.requirePositive("poolScanPeriod", poolScanPeriod)
        if poolScanPeriod > threshold {
            throw ConfigurationError(
                field: "poolScanPeriod", value: "\(poolScanPeriod)",
                requirement: "must not exceed threshold (\(threshold))")
        }
        if checkPeriod > threshold {
            // A check period longer than the threshold would report stalls late by design.
            throw ConfigurationError(
                field: "checkPeriod", value: "\(checkPeriod)",
                requirement: "must not exceed threshold (\(threshold))")
        }
        if sampleInterval >= threshold {
            throw ConfigurationError(
                field: "sampleInterval", value: "\(sampleInterval)",
                requirement: "must be shorter than threshold (\(threshold))")
        }
        if suspensionLimit <= checkPeriod {
            // Otherwise every ordinary round would look like the process had been stopped.
            throw ConfigurationError(
                field: "suspensionLimit", value: "\(suspensionLimit)",
                requirement: "must be longer than checkPeriod (\(checkPeriod))")
        }
        try Self.requireAtLeastOne("ringCapacity", ringCapacity)
        try Self.requireAtLeastOne("maxFrames", maxFrames)
        // Values the sampler cannot serve would silently disable sampling: refuse them here.
        try Self.requireAtMost("ringCapacity", ringCapacity, Self.maximumRingCapacity, what: "samples a ring holds")
        try Self.requireAtMost("maxFrames", maxFrames, Self.maximumFrames, what: "frames a sample holds")
        try Self.requireAtLeastOne("threadCountCutoff", threadCountCutoff)
        try Self.requireAtLeastOne("reportCapPerWindow", reportCapPerWindow)
        try Self.requireUnitFraction("suspicionFraction", suspicionFraction)
        if !(samplerBudget >= 0 && samplerBudget <= 1) {
            throw ConfigurationError(field: "samplerBudget", value: "\(samplerBudget)",
                                     requirement: "must be a fraction of one core in 0...1 (0: no budget)")
        }
        try Self.requirePositive("sampleCost", sampleCost)
        if busyLoopWindow < .zero {
            throw ConfigurationError(field: "busyLoopWindow", value: "\(busyLoopWindow)",
                                     requirement: "must be zero (off) or positive")
        }
        try cpu.validate()
        return self
    }

    static func requirePositive(_ field: String, _ value: Duration) throws(ConfigurationError) {
        guard value > .zero else {
            throw ConfigurationError(field: field, value: "\(value)", requirement: "must be greater than zero")
        }
    }

    static func requireNonNegative(_ field: String, _ value: Duration) throws(ConfigurationError) {
        guard value >= .zero else {
            throw ConfigurationError(field: field, value: "\(value)", requirement: "must not be negative")
        }
    }

    static func requireAtLeastOne(_ field: String, _ value: Int) throws(ConfigurationError) {
        guard value >= 1 else {
            throw ConfigurationError(field: field, value: "\(value)", requirement: "must be at least 1")
        }
    }

    static func requireAtMost(_ field: String, _ value: Int, _ limit: Int, what: String) throws(ConfigurationError) {
        guard value <= limit else {
            throw ConfigurationError(field: field, value: "\(value)", requirement: "must be at most \(limit), the \(what)")
        }
    }

    static func requireUnitFraction(_ field: String, _ value: Double) throws(ConfigurationError) {
        // Written as a positive test so that NaN fails it.
        guard value > 0, value <= 1 else {
            throw ConfigurationError(field: field, value: "\(value)", requirement: "must be in (0, 1]")
        }
    }
}

extension CPUConfiguration {
    /// Throws for the first CPU setting that cannot work; field names are prefixed `cpu.`.
    func validate() throws(ConfigurationError) {
        typealias W = WatchdogConfiguration
        try W.requireUnitFraction("cpu.processHighFraction", processHighFraction)
        try W.requireAtLeastOne("cpu.topThreadCount", topThreadCount)
        try W.requireUnitFraction("cpu.topThreadMinimumFraction", topThreadMinimumFraction)
        try W.requireUnitFraction("cpu.sustainedStartFraction", sustainedStartFraction)
        try W.requireUnitFraction("cpu.sustainedAbandonRatio", sustainedAbandonRatio)
        try W.requirePositive("cpu.sustainedMinimumDuration", sustainedMinimumDuration)
        try W.requireNonNegative("cpu.sustainedCoolDown", sustainedCoolDown)
        try W.requirePositive("cpu.maximumReadingPeriod", maximumReadingPeriod)
    }
}
