/// CPU-usage policy settings *(matrix defaults)*.
///
/// Fractions of "one core" use 1.0 for a thread that ran the whole period; process usage can
/// exceed 1.0 on a multi-core machine.
public struct CPUConfiguration: Sendable, Equatable {
    /// Process CPU above this fraction of all cores is "CPU high" (0.8 × cores).
    public var processHighFraction: Double
    /// How many of the busiest threads a CPU-high event names (3).
    public var topThreadCount: Int
    /// A thread is named in a CPU-high event only above this fraction of one core (0.05).
    public var topThreadMinimumFraction: Double
    /// Sustained tracking starts when process usage exceeds this fraction of one core (0.8).
    public var sustainedStartFraction: Double
    /// Tracking is abandoned when the running average falls below this share of the start
    /// fraction (0.5, i.e. 40 % of one core by default).
    public var sustainedAbandonRatio: Double
    /// A sustained event fires after tracking for at least this long (60 s).
    public var sustainedMinimumDuration: Duration
    /// After a sustained event, tracking pauses for this long (60 s).
    public var sustainedCoolDown: Duration
    /// Readings whose period is longer than this are ignored (5 s): the process was probably
    /// stopped, and one huge period would dominate the average.
    public var maximumReadingPeriod: Duration

    /// Creates CPU settings; every parameter defaults to matrix's value.
    public init(
        processHighFraction: Double = 0.8,
        topThreadCount: Int = 3,
        topThreadMinimumFraction: Double = 0.05,
        sustainedStartFraction: Double = 0.8,
        sustainedAbandonRatio: Double = 0.5,
        sustainedMinimumDuration: Duration = .seconds(60),
        sustainedCoolDown: Duration = .seconds(60),
        maximumReadingPeriod: Duration = .seconds(5)
    ) {
        self.processHighFraction = processHighFraction
        self.topThreadCount = topThreadCount
        self.topThreadMinimumFraction = topThreadMinimumFraction
        self.sustainedStartFraction = sustainedStartFraction
        self.sustainedAbandonRatio = sustainedAbandonRatio
        self.sustainedMinimumDuration = sustainedMinimumDuration
        self.sustainedCoolDown = sustainedCoolDown
        self.maximumReadingPeriod = maximumReadingPeriod
    }
}
