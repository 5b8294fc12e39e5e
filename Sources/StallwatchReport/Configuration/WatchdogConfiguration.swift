#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything the watchdog policy can be tuned by. Defaults are matrix's *(matrix)*.
///
/// Construct, then call ``validated()`` before use: the initializer accepts anything so that a
/// decoded configuration can be checked in one place with one kind of error.
public struct WatchdogConfiguration: Sendable, Equatable {
    /// A loop busy for strictly longer than this is stalled (2 s; milliseconds are valid).
    public var threshold: Duration
    /// How often an idle ping-probed loop is pinged. Left at its default (threshold / 2), the
    /// watchdog pings every 40 ms instead when that is shorter, for starts right within 50 ms
    /// (the detection schedule); any other value is used as it is. Heartbeat loops are not polled:
    /// the watchdog wakes at each busy stamp plus the threshold.
    public var checkPeriod: Duration
    /// Time between stack samples of a suspected loop (50 ms).
    public var sampleInterval: Duration
    /// Samples kept per loop (checkPeriod / sampleInterval, 20 by default; at most
    /// ``maximumRingCapacity``).
    public var ringCapacity: Int
    /// Frames kept per sample (100; at most ``maximumFrames``).
    public var maxFrames: Int
    /// Above this many threads at a stall, other threads' stacks are not walked for the report (the
    /// cost grows with each thread). It never decides the cause. Default: 64 *(matrix)*, or 8 per
    /// online core on machines with more than 8 cores, where a few hundred threads are ordinary.
    public var threadCountCutoff: Int
    /// Used only when the watchdog cannot read its own scheduler statistics (`schedstat`), which
    /// normally tell a stopped process from a late watchdog: then a round this late is taken as a
    /// stop (max(10 s, 2 × checkPeriod)).
    public var suspensionLimit: Duration
    /// At most this many reports per rolling ``reportWindow`` (100); the rest are counted.
    public var reportCapPerWindow: Int
    /// The rolling window for ``reportCapPerWindow`` (24 h).
    public var reportWindow: Duration
    /// Sample every loop all the time rather than only when suspected (false).
    public var sampleContinuously: Bool
    /// Start sampling once busy longer than this fraction of the threshold (0.5).
    public var suspicionFraction: Double
    /// CPU-usage policy settings.
    public var cpu: CPUConfiguration
    /// Watch every Swift concurrency pool thread one job at a time (true): a job that holds its
    /// thread past the threshold is reported under the loop name `cooperative-pool-job`, even
    /// while the rest of the pool still answers pings.
    public var watchPoolJobs: Bool
    /// How often pool threads are scanned for long jobs. Left at its default (threshold / 2), the
    /// scan runs every 40 ms instead when that is shorter (the detection schedule): a job's start is
    /// then right within about 20 ms and its event comes within about 20 ms of start + threshold.
    /// Each scan wakes the watchdog; a longer period set here trades that accuracy for a lower
    /// idle cost (`bench probe` measures it). A pool whose every worker waits for work is not
    /// scanned at all until it is given work: the runtime's global enqueue wakes the watchdog.
    public var poolScanPeriod: Duration
    /// When another handler takes the sampling signal over, install ours again, chaining to it
    /// (false: say so once in an `.error` event and go on with signal-free evidence only).
    public var reclaimSignal: Bool
    /// Also write each stored report's samples as a gzipped pprof profile (`<report>.pb.gz`) beside
    /// its JSON file, for `go tool pprof`, Pyroscope and Parca (false). Evicted with its report.
    public var writePprof: Bool
    /// Sample a stalled thread with a perf event (the kernel copies its registers and stack; no
    /// signal reaches the thread) where the kernel permits it, and with the timer ring's signal
    /// where it does not: `perf_event_paranoid`, seccomp or a container refuses it, and the report's
    /// `sampling.driverFallback` says so (false: always the timer ring, the measured default).
    public var signalFreeSampling: Bool
    /// The CPU sampling may take, as a fraction of one core (0.001 = 0.1 %; 0 for no limit). With
    /// many loops stalled at once the watchdog stretches their sampling interval to stay inside it
    /// (the sampling governor); each report states the interval it was sampled at and why.
    public var samplerBudget: Double
    /// What one sample costs, for the budget: the stolen time per sample `bench sampler` measures
    /// (about 20 µs on a 2-core VM).
    public var sampleCost: Duration
    /// A ping-probed loop whose thread keeps a core busy (or whose pings keep waiting, under the
    /// threshold) this long, with the same stack recurring, is reported as a `busyLoop` (30 s;
    /// zero turns it off).
    public var busyLoopWindow: Duration

    /// Creates a configuration. `checkPeriod` defaults to `threshold / 2` and `ringCapacity` to
    /// `checkPeriod / sampleInterval` (at least 1), so changing the threshold alone stays coherent.
    public init(
        threshold: Duration = .seconds(2),
        checkPeriod: Duration? = nil,
        sampleInterval: Duration = .milliseconds(50),
        ringCapacity: Int? = nil,
        maxFrames: Int = 100,
        threadCountCutoff: Int? = nil,
        suspensionLimit: Duration? = nil,
        reportCapPerWindow: Int = 100,
        reportWindow: Duration = .seconds(24 * 60 * 60),
        sampleContinuously: Bool = false,
        suspicionFraction: Double = 0.5,
        cpu: CPUConfiguration = CPUConfiguration(),
        watchPoolJobs: Bool = true,
        poolScanPeriod: Duration? = nil,
        reclaimSignal: Bool = false,
        writePprof: Bool = false,
        samplerBudget: Double = 0.001,
        sampleCost: Duration = .microseconds(20),
        busyLoopWindow: Duration = .seconds(30),
        signalFreeSampling: Bool = false
    ) {
        let period = checkPeriod ?? threshold / 2
        self.threshold = threshold
        self.checkPeriod = period
        self.sampleInterval = sampleInterval
        self.ringCapacity = ringCapacity ?? Self.derivedRingCapacity(period: period, interval: sampleInterval)
        self.maxFrames = maxFrames
        self.threadCountCutoff = threadCountCutoff ?? Self.defaultThreadCountCutoff(cores: Self.onlineCores)
        self.suspensionLimit = suspensionLimit ?? max(.seconds(10), period * 2)
        self.reportCapPerWindow = reportCapPerWindow
        self.reportWindow = reportWindow
        self.sampleContinuously = sampleContinuously
        self.suspicionFraction = suspicionFraction
        self.cpu = cpu
        self.watchPoolJobs = watchPoolJobs
        self.poolScanPeriod = poolScanPeriod ?? threshold / 2
        self.reclaimSignal = reclaimSignal
        self.writePprof = writePprof
        self.samplerBudget = samplerBudget
        self.sampleCost = sampleCost
        self.busyLoopWindow = busyLoopWindow
        self.signalFreeSampling = signalFreeSampling
    }

    /// The most frames one sample holds (the sampler's fixed capture buffer).
    public static let maximumFrames = 256
    /// The most samples one loop's sampling ring holds.
    public static let maximumRingCapacity = 1024

    /// The default cut-off for a machine with `cores` online cores: `max(64, 8 × cores)`.
    public static func defaultThreadCountCutoff(cores: Int) -> Int {
        max(64, 8 * max(cores, 1))
    }

    static var onlineCores: Int { max(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 1) }

    /// One check period's worth of samples; guarded so a nonsense interval cannot trap here
    /// (validation reports it instead).
    static func derivedRingCapacity(period: Duration, interval: Duration) -> Int {
        guard interval > .zero, period > .zero else { return 1 }
        let ratio = period / interval
        guard ratio.isFinite else { return 1 }
        // A long threshold at a short interval would ask for more than a ring holds: the ring keeps
        // the newest samples, so take the most it can hold rather than disabling sampling.
        return min(max(1, Int(min(ratio, Double(maximumRingCapacity)))), maximumRingCapacity)
    }
}
