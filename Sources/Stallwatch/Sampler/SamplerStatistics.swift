import CSampler

/// The sampler's own counters since the process started: what its signal captures cost and how
/// often one went wrong (see also the `stallwatch_capture_timeouts_total` metric).
public struct SamplerStatistics: Sendable, Equatable {
    /// Captures the signal handler served.
    public var handled: Int
    /// Answers that came after their request was abandoned (ignored, never written into a newer one).
    public var late: Int
    /// Signals passed on to the handler that was installed before Stallwatch's.
    public var chained: Int
    /// Captures abandoned at their deadline.
    public var timeouts: Int

    /// The counters now.
    public static var current: SamplerStatistics {
        var s = sw_sampler_stats_t()
        sw_sampler_stats(&s)
        return SamplerStatistics(handled: Int(s.handled), late: Int(s.late), chained: Int(s.chained), timeouts: Int(s.timeouts))
    }
}
