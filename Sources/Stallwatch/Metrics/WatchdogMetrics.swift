import CoreMetrics
import StallwatchPolicy
import StallwatchReport
import Synchronization

/// The watchdog's figures as swift-metrics metrics, for whatever backend the application
/// bootstrapped (Prometheus, OpenTelemetry, StatsD; nothing is recorded until one is).
///
/// Every name starts with ``prefix`` (default `stallwatch`). Label names follow Prometheus
/// conventions (`snake_case`, counters end in `_total`, times in seconds):
///
/// | Metric | Kind | Labels | What it counts |
/// |---|---|---|---|
/// | `stallwatch_stalls_total` | counter | `loop`, `cause` | stalls reported (first report of each) |
/// | `stallwatch_stall_duration_seconds` | timer | `loop`, `cause` | final duration of each reported stall |
/// | `stallwatch_loop_lag_seconds` | timer | `loop` | every ping's latency (an idle pool or NIO loop is looked at, not pinged: no sample); a heartbeat loop's longest busy period per round |
/// | `stallwatch_reports_filtered_total` | counter | `loop`, `reason` | stalls not reported: `trivial_stack`, `annealing`, `rate_limited` |
/// | `stallwatch_feedback_loops_total` | counter | `loop` | keys counted past their threshold in one busy period |
/// | `stallwatch_busy_loops_total` | counter | `loop` | ping-probed loops busy for `busyLoopWindow` without stalling |
/// | `stallwatch_cpu_reports_total` | counter | `kind` | high-CPU reports: `cpuHigh`, `cpuSustained` |
/// | `stallwatch_samples_total` | counter | | stacks taken from suspect and stalled loop threads (signal or /proc) |
/// | `stallwatch_sampler_cpu_seconds_total` | counter | | CPU the signal handler spent capturing them |
/// | `stallwatch_watchdog_cpu_seconds_total` | counter | | CPU of the watchdog thread |
/// | `stallwatch_watchdog_wakeups_total` | counter | | the watchdog thread's rounds (each one wake-up): with its CPU, what watching costs |
/// | `stallwatch_watchdog_signals_total` | counter | | capture signals sent to threads (each interrupts one), process-wide |
/// | `stallwatch_watchdog_lateness_seconds` | timer | | how late each watchdog round started |
/// | `stallwatch_sampling_interval_seconds` | gauge | | the interval stalled loops are sampled at (stretched by `samplerBudget`) |
/// | `stallwatch_signal_owned` | gauge | | 1 while the sampling signal's handler is Stallwatch's, else 0 |
/// | `stallwatch_signal_lost_total` | counter | | times another handler took the sampling signal over |
/// | `stallwatch_errors_total` | counter | | `.error` events (e.g. an unwritable report directory) |
/// | `stallwatch_capture_timeouts_total` | counter | | signal captures abandoned at their deadline (a thread that did not answer in time), process-wide |
/// | `stallwatch_export_failures_total` | counter | `reason` | failed tries of ``OTLPProfileExporter`` requests: `http_503`..., `no_answer`, `partial_success` (taken, part rejected) |
/// | `stallwatch_profiles_dropped_total` | counter | | stall profiles ``OTLPProfileExporter`` gave up on |
///
/// With ``ProcessMetrics`` enabled, the process figures documented there are added.
public final class WatchdogMetrics: Sendable {
    /// The first word of every metric name.
    public let prefix: String
    /// Process figures updated on the watchdog's rounds, or `nil` when not collected.
    public let process: ProcessMetrics?
    private let factory: (any MetricsFactory)?
    private let state = Mutex<State>(State())

    private struct State {
        var counters: [MetricKey: Counter] = [:]
        var timers: [MetricKey: CoreMetrics.Timer] = [:]
        var causeOfStall: [String: String] = [:]   // loop -> cause of its stall in progress
        var samplerCPU: FloatingPointCounter?
        var watchdogCPU: FloatingPointCounter?
        var signalOwned: Gauge?
        var gauges: [String: Gauge] = [:]
        /// Process-wide monotonic totals last seen, by counter name (capture timeouts, signals sent).
        var totalsSeen: [String: UInt64] = [:]
        var wakeups: Counter?
        var signals: Counter?
        var lagTimers: [String: CoreMetrics.Timer] = [:]
        // Recorded every watchdog round: held here rather than looked up by name each time.
        var lateness: CoreMetrics.Timer?
        var captureTimeouts: Counter?
        var samplingInterval: (gauge: Gauge, value: Duration)?
    }

    /// Metrics named `prefix_…`, created through `factory` (default: the one the application
    /// bootstrapped with `MetricsSystem.bootstrap`).
    ///
    /// - Parameters:
    ///   - prefix: the first word of every name; letters, digits and `_` only.
    ///   - process: also report the process figures of ``ProcessMetrics`` (off by default).
    ///   - factory: the metrics backend; `nil` for `MetricsSystem.factory` at the time of use.
    /// - Throws: ``MetricsConfigurationError`` for a prefix Prometheus would not accept.
    public init(prefix: String = "stallwatch", process: ProcessMetrics? = nil,
                factory: (any MetricsFactory)? = nil) throws(MetricsConfigurationError) {
        guard let first = prefix.unicodeScalars.first, !("0"..."9").contains(first),
              prefix.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" })
        else { throw .invalidPrefix(prefix) }
        self.prefix = prefix
        self.process = process
        self.factory = factory
    }

    /// Named `stallwatch_…`, sent to the backend bootstrapped with `MetricsSystem.bootstrap`, no
    /// process figures: what a ``Watchdog`` uses unless told otherwise.
    public static let standard: WatchdogMetrics = {
        // The default prefix is valid: this cannot throw.
        guard let metrics = try? WatchdogMetrics() else { preconditionFailure("the default metrics prefix is invalid") }
        return metrics
    }()

    private var resolvedFactory: any MetricsFactory { factory ?? MetricsSystem.factory }

    private func name(_ suffix: String) -> String { "\(prefix)_\(suffix)" }

    /// A dimensionless metric is keyed by its suffix itself (a literal: no allocation on the
    /// watchdog's idle rounds, which record lateness and capture timeouts every time).
    private static func key(_ suffix: String, _ dimensions: [(String, String)]) -> String {
        guard !dimensions.isEmpty else { return suffix }
        return ([suffix] + dimensions.flatMap { [$0.0, $0.1] }).joined(separator: "\u{0}")
    }

    /// A metric's identity with up to two labels held as they are: looking one up joins no
    /// strings (a stall's start and end each record one).
    private struct MetricKey: Hashable {
        var suffix: String
        var label0 = "", value0 = "", label1 = "", value1 = ""

        init(_ suffix: String, _ dimensions: [(String, String)]) {
            guard dimensions.count <= 2 else {
                // More labels than this type holds: the joined form (no metric has more today).
                self.suffix = WatchdogMetrics.key(suffix, dimensions)
                return
            }
            self.suffix = suffix
            if let d = dimensions.first { (label0, value0) = d }
            if dimensions.count == 2 { (label1, value1) = dimensions[1] }
        }

        init(_ suffix: String, _ first: (String, String), _ second: (String, String)) {
            self.suffix = suffix
            (label0, value0) = first
            (label1, value1) = second
        }
    }

    /// A two-label metric, its labels held as they are: a stall's start and end each record one,
    /// and an array of the labels was allocated for every lookup. Only a metric seen
    /// for the first time gets one.
    private func counter(_ suffix: String, _ first: (String, String), _ second: (String, String),
                         in s: inout State) -> Counter {
        if let c = s.counters[MetricKey(suffix, first, second)] { return c }
        return counter(suffix, [first, second], in: &s)
    }

    private func timer(_ suffix: String, _ first: (String, String), _ second: (String, String),
                       in s: inout State) -> CoreMetrics.Timer {
        if let t = s.timers[MetricKey(suffix, first, second)] { return t }
        return timer(suffix, [first, second], in: &s)
    }

    private func counter(_ suffix: String, _ dimensions: [(String, String)], in s: inout State) -> Counter {
        let key = MetricKey(suffix, dimensions)
        if let c = s.counters[key] { return c }
        let c = Counter(label: name(suffix), dimensions: dimensions, factory: resolvedFactory)
        s.counters[key] = c
        return c
    }

    private func timer(_ suffix: String, _ dimensions: [(String, String)], in s: inout State) -> CoreMetrics.Timer {
        let key = MetricKey(suffix, dimensions)
        if let t = s.timers[key] { return t }
        let t = CoreMetrics.Timer(label: name(suffix), dimensions: dimensions, factory: resolvedFactory)
        s.timers[key] = t
        return t
    }

    /// Counts what an event tells: stalls, their durations, filtered reports, CPU reports, errors.
    func record(_ event: WatchdogEvent) {
        state.withLock { s in
            switch event.kind {
            case .stall:
                guard let report = event.report, report.sequenceInStall == 0 else { return }
                let loop = report.loopName ?? "?"
                let cause = report.cause?.kind.rawValue ?? StallCauseKind.unknown.rawValue
                s.causeOfStall[loop] = cause
                counter("stalls_total", ("loop", loop), ("cause", cause), in: &s).increment()
            case .stallEnded:
                let loop = event.loop ?? "?"
                let cause = s.causeOfStall.removeValue(forKey: loop) ?? StallCauseKind.unknown.rawValue
                timer("stall_duration_seconds", ("loop", loop), ("cause", cause), in: &s)
                    .recordNanoseconds((event.duration ?? .zero).clampedNanoseconds)
            case .filtered:
                let reason = event.filterReason?.metricLabel ?? "unknown"
                counter("reports_filtered_total", ("loop", event.loop ?? "?"), ("reason", reason), in: &s).increment()
            case .cpu:
                counter("cpu_reports_total", [("kind", event.report?.kind.rawValue ?? "?")], in: &s).increment()
            case .error:
                counter("errors_total", [], in: &s).increment()
            case .busyLoop:
                counter("busy_loops_total", [("loop", event.loop ?? "?")], in: &s).increment()
            case .feedbackLoop:
                counter("feedback_loops_total", [("loop", event.loop ?? "?")], in: &s).increment()
            default:
                break
            }
        }
    }

    /// One failed try of a profile export.
    func recordExportFailure(reason: String) {
        state.withLock { s in counter("export_failures_total", [("reason", reason)], in: &s).increment() }
    }

    /// Stall profiles the exporter gave up on.
    func recordProfilesDropped(_ count: Int) {
        state.withLock { s in counter("profiles_dropped_total", [], in: &s).increment(by: Int64(count)) }
    }

    /// A loop's lag: one ping's latency or the longest busy period of a round.
    func recordLag(loop: String, _ lag: Duration) {
        state.withLock { s in
            // Looked up by the loop's name alone: a lag is recorded every ping, and the general
            // key would build a string each time.
            let t = s.lagTimers[loop] ?? timer("loop_lag_seconds", [("loop", loop)], in: &s)
            if s.lagTimers[loop] == nil { s.lagTimers[loop] = t }
            t.recordNanoseconds(lag.clampedNanoseconds)
        }
    }

    /// Samples taken from loop threads and the handler time they cost.
    func recordSamples(count: Int, handlerTime: Duration) {
        guard count > 0 else { return }
        state.withLock { s in
            counter("samples_total", [], in: &s).increment(by: Int64(count))
            if s.samplerCPU == nil {
                s.samplerCPU = FloatingPointCounter(label: name("sampler_cpu_seconds_total"), factory: resolvedFactory)
            }
            s.samplerCPU?.increment(by: handlerTime.secondsDouble)
        }
    }

    /// One watchdog round: how late it started and the watchdog thread's CPU time since the last.
    func recordRound(lateness: Duration, watchdogCPU: Duration) {
        state.withLock { s in
            if s.lateness == nil { s.lateness = timer("watchdog_lateness_seconds", [], in: &s) }
            s.lateness?.recordNanoseconds(lateness.clampedNanoseconds)
            if s.watchdogCPU == nil {
                s.watchdogCPU = FloatingPointCounter(label: name("watchdog_cpu_seconds_total"), factory: resolvedFactory)
            }
            if watchdogCPU > .zero { s.watchdogCPU?.increment(by: watchdogCPU.secondsDouble) }
            if s.wakeups == nil { s.wakeups = counter("watchdog_wakeups_total", [], in: &s) }
            s.wakeups?.increment(by: 1)
        }
    }

    /// The sampler's count of capture signals sent (process-wide, monotonic): what it grew by since
    /// the last call is added to `watchdog_signals_total`.
    func recordSignalsSent(total: UInt64) {
        state.withLock { s in
            if s.signals == nil { s.signals = counter("watchdog_signals_total", [], in: &s) }
            s.signals?.increment(by: Self.growth(of: total, named: "signals", in: &s))
        }
    }

    /// The sampler's count of captures abandoned at their deadline (process-wide, monotonic): what
    /// it grew by since the last call is added to `capture_timeouts_total`.
    func recordCaptureTimeouts(total: UInt64) {
        state.withLock { s in
            if s.captureTimeouts == nil { s.captureTimeouts = counter("capture_timeouts_total", [], in: &s) }
            s.captureTimeouts?.increment(by: Self.growth(of: total, named: "timeouts", in: &s))
        }
    }

    /// What a process-wide monotonic `total` grew by since the last call for `name`; 0 the first
    /// time (what came before this watchdog is not its own).
    private static func growth(of total: UInt64, named name: String, in s: inout State) -> Int64 {
        let seen = s.totalsSeen[name] ?? total
        s.totalsSeen[name] = total
        return total > seen ? Int64(clamping: total - seen) : 0
    }

    /// Refreshes the process figures when they are due (``ProcessMetrics/interval``).
    func updateProcess(now: MonotonicInstant) {
        guard let process else { return }
        process.update(now: now) { suffix, dimensions in
            state.withLock { s in
                let key = Self.key(suffix, dimensions)
                if let g = s.gauges[key] { return g }
                let g = Gauge(label: name(suffix), dimensions: dimensions, factory: resolvedFactory)
                s.gauges[key] = g
                return g
            }
        }
    }

    /// The interval stalled loops are sampled at now (stretched by the CPU budget when many are).
    /// Called every round; the gauge is set when the interval changes (a gauge keeps its value).
    func recordSamplingInterval(_ interval: Duration) {
        state.withLock { s in
            if let recorded = s.samplingInterval {
                guard recorded.value != interval else { return }
                s.samplingInterval = (recorded.gauge, interval)
            } else {
                s.samplingInterval = (Gauge(label: name("sampling_interval_seconds"), factory: resolvedFactory), interval)
            }
            s.samplingInterval?.gauge.record(interval.secondsDouble)
        }
    }

    /// Whether the sampling signal is still ours; `lostNow` when it was just taken over.
    func recordSignal(owned: Bool, lostNow: Bool) {
        state.withLock { s in
            if s.signalOwned == nil { s.signalOwned = Gauge(label: name("signal_owned"), factory: resolvedFactory) }
            s.signalOwned?.record(owned ? 1 : 0)
            if lostNow { counter("signal_lost_total", [], in: &s).increment() }
        }
    }
}

/// A metrics configuration that cannot work.
public enum MetricsConfigurationError: Error, Equatable, CustomStringConvertible {
    /// The prefix is empty, starts with a digit or holds characters other than letters, digits
    /// and `_` (Prometheus would reject every name).
    case invalidPrefix(String)
    /// ``ProcessMetrics`` refreshed more often than every 100 ms (each refresh reads several
    /// files of `/proc` on the watchdog's thread).
    case invalidInterval(Duration)

    /// One line saying what is wrong and what would work.
    public var description: String {
        switch self {
        case .invalidInterval(let d):
            "process metrics interval \(d): at least 100 ms"
        case .invalidPrefix(let p):
            "metric prefix \"\(p)\": use letters, digits and _ only, not starting with a digit"
        }
    }
}

extension FilterReason {
    /// The `reason` label of `stallwatch_reports_filtered_total`.
    var metricLabel: String { kind.name }
}

