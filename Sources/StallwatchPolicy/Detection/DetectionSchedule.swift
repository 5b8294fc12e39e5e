/// How often the watchdog must look at loops that cannot tell it when they start work, chosen for
/// the latency goal rather than fixed at half the threshold.
///
/// A heartbeat loop stamps its own start, so the watchdog simply wakes at that stamp plus the
/// threshold (``StallDetector/wakeTimes``). A ping-probed loop is only known to be busy once a ping
/// it has not answered was posted, and a pool job once a scan saw it: the stall's start is known to
/// within one such period, and its event comes up to one period after start + threshold. With the
/// period at half the threshold (matrix) a 700 ms stall at a 500 ms threshold looked like 450 ms
/// and was missed whenever it began just after a ping. Here the period is the latency goal less a
/// margin for the watchdog's own wake-up: 40 ms, or the configured period when that is shorter.
public struct DetectionSchedule: Sendable, Equatable {
    /// A stall's event is due within the threshold plus this after the stall began.
    public static let latencyGoal = Duration.milliseconds(50)
    /// The part of ``latencyGoal`` left for the watchdog thread waking late.
    public static let wakeMargin = Duration.milliseconds(10)

    /// How often an idle ping-probed loop gets a new ping.
    public let pingPeriod: Duration
    /// How often the cooperative pool's threads are scanned for a new long job.
    public let poolScanPeriod: Duration

    /// The schedule for a (validated) configuration.
    public init(configuration: WatchdogConfiguration) {
        let period = Self.latencyGoal - Self.wakeMargin
        pingPeriod = min(configuration.checkPeriod, period)
        poolScanPeriod = min(configuration.poolScanPeriod, period)
    }
}
