import StallwatchReport
/// Every period and time limit the watchdog derives from the threshold, in one place; above all how
/// often it must look at loops that cannot tell it when they start work, chosen for the accuracy
/// goal rather than fixed at half the threshold.
///
/// A heartbeat loop stamps its own start, so the watchdog simply wakes at that stamp plus the
/// threshold (``StallDetector/wakeTimes``). A ping-probed loop is only known to be busy once a ping
/// it leaves waiting was posted, and a pool job once a scan saw it; the start of such a stall is
/// put midway between the last look that saw the loop free and the first that saw it busy (a
/// CPU-bound pool job's start is read from its thread's CPU clock instead). With one look every
/// period P, its start is off by at most P / 2 either way, and its event comes at most P / 2 after
/// start + threshold. With P at half the threshold (matrix) a 700 ms stall at a 500 ms threshold
/// looked like 450 ms and was missed whenever it began just after a ping. Here P is the accuracy
/// goal less a margin for the watchdog's own wake-up: 40 ms, or the default period (threshold / 2)
/// when that is shorter. A `checkPeriod` or `poolScanPeriod` configured to another value is kept. (At 80 ms, measured on a loaded 2-vCPU VM, ping-timed starts were 53 ms off and events
/// 55 ms past the threshold at p99; at 40 ms, 20 and 22 ms.)
///
/// The price is wake-ups: a watchdog with pings or pool-job watching wakes every P even when all is
/// idle (a heartbeat-only watchdog does not, nor does pool-job watching while every pool worker
/// waits for work: the pool then rests until the runtime's enqueue wakes the watchdog). A loop that reports its ticks (``LoopLookPolicy``) is
/// looked at every P instead of pinged, so the loop itself is not woken; the watchdog still is,
/// unless every such loop sleeps in `epoll_wait` and nothing else needs the rounds (`LoopRest`
/// in Stallwatch: the loops' epoll descriptors wake the watchdog instead). So
/// is the cooperative pool while pool-job watching scans it: a worker waiting for work means free.
package struct DetectionSchedule: Sendable, Equatable {
    /// A stall's start and duration should be right within this, and its event come within the
    /// threshold plus this after the stall began.
    package static let accuracyGoal = Duration.milliseconds(50)
    /// The part of ``accuracyGoal`` left for the watchdog thread waking late.
    package static let wakeMargin = Duration.milliseconds(10)

    /// How often an idle ping-probed loop gets a new ping (from `checkPeriod` when configured).
    package let pingPeriod: Duration
    /// How often the cooperative pool's threads are scanned for a new long job (from
    /// `poolScanPeriod` when configured).
    package let poolScanPeriod: Duration
    /// Half of ``poolScanPeriod``: when the pool is scanned after an enqueue that ended its rest,
    /// for a watchdog whose ping rounds come anyway (computed once: a `Duration` divided by an
    /// integer goes through 128-bit generic arithmetic, 5 % of an idle round's CPU).
    package let poolScanHalfPeriod: Duration

    /// How long after an idle round the watchdog may sleep when it watches heartbeat loops only:
    /// a loop that turns busy right after is seen within it, before its threshold, and then woken
    /// for exactly at its threshold (max(check period, 0.9 × threshold)).
    package let idlePoll: Duration
    /// A round's time for one-off captures of stalled threads, and for walking the other threads
    /// for a report (threshold / 20, at least 20 ms): with many loops stalled at once, the others'
    /// detection waits for it.
    package let captureTime: Duration
    /// A watchdog round later than this is logged as late (threshold / 10).
    package let lateWarning: Duration
    /// A ping this late, under the threshold, counts towards a busy loop (threshold / 4).
    package let busyLoopLatency: Duration
    /// How often a suspected or stalled loop's thread is read for evidence (state, system call,
    /// CPU, run-queue wait) between the rounds that must have it fresh (the first report's):
    /// the look period. With 64 loops stalled at once the watchdog runs a round every few ms, and
    /// reading every thread in each was 40 reads per stall, most of the round's work.
    package let evidencePeriod: Duration

    /// The schedule for a (validated) configuration.
    package init(configuration: WatchdogConfiguration) {
        let period = Self.accuracyGoal - Self.wakeMargin
        let threshold = configuration.threshold
        // A period set to anything but its default (threshold / 2) is the user's choice, kept as
        // it is: a longer one trades accuracy for fewer wake-ups.
        let byDefault = threshold / 2
        pingPeriod = configuration.checkPeriod == byDefault ? min(byDefault, period) : configuration.checkPeriod
        poolScanPeriod = configuration.poolScanPeriod == byDefault ? min(byDefault, period) : configuration.poolScanPeriod
        poolScanHalfPeriod = poolScanPeriod / 2
        idlePoll = max(configuration.checkPeriod, threshold * 0.9)
        captureTime = max(threshold / 20, .milliseconds(20))
        lateWarning = threshold / 10
        busyLoopLatency = threshold / 4
        evidencePeriod = min(byDefault, period)
    }
}
