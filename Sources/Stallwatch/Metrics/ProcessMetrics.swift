import CoreMetrics
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import StallwatchPolicy
import StallwatchReport
import Synchronization

/// Process and machine figures (the kind Wedjat shows on a phone, for a Linux server), updated on
/// the watchdog's own rounds at most once per ``interval``: no thread of their own.
///
/// Pass one to ``WatchdogMetrics/init(prefix:process:factory:)``. Gauges, named after the prefix:
///
/// | Metric | Labels | Value |
/// |---|---|---|
/// | `stallwatch_process_cpu_percent` | | the process's CPU over the last interval; 100 = one core |
/// | `stallwatch_system_cpu_percent` | | the machine's busy CPU over the last interval; 100 = every core |
/// | `stallwatch_cpu_logical_cores` | | online logical CPUs |
/// | `stallwatch_cpu_frequency_hertz` | `cpu` | current frequency per CPU (when cpufreq exists; often not in VMs) |
/// | `stallwatch_process_resident_memory_bytes` | | resident set size |
/// | `stallwatch_memory_available_bytes` | | `MemAvailable` of `/proc/meminfo` |
/// | `stallwatch_process_threads` | | threads of the process |
/// | `stallwatch_process_open_fds` | | open file descriptors |
/// | `stallwatch_process_startup_seconds` | | process start to ``ready()`` (or to the watchdog's first round) |
/// | `stallwatch_numa_memory_bytes` | `node` | memory of each NUMA node (libnuma) |
/// | `stallwatch_numa_memory_free_bytes` | `node` | free memory of each NUMA node |
public final class ProcessMetrics: Sendable {
    /// The least time between two updates.
    public let interval: Duration
    private let state = Mutex<State>(State())

    private struct State {
        var lastUpdate: MonotonicInstant?
        var lastProcessCPU: Duration?
        var lastSystemCPU: SystemFigures.CPUTimes?
        var startup: Double?
        var startupRecorded = false
    }

    /// Process figures refreshed at most once per `interval` (at least 100 ms; default 1 s).
    /// - Throws: ``MetricsConfigurationError/invalidInterval(_:)`` below 100 ms.
    public init(interval: Duration = .seconds(1)) throws(MetricsConfigurationError) {
        guard interval >= .milliseconds(100) else { throw .invalidInterval(interval) }
        self.interval = interval
    }

    /// The service is ready (listening, warmed up): the time since the process started becomes
    /// `stallwatch_process_startup_seconds`. Only the first call counts; without one, the
    /// watchdog's first round stands for it.
    public func ready() {
        let age = SystemFigures.processAge()
        state.withLock { s in if s.startup == nil { s.startup = age ?? 0 } }
    }

    /// Refreshes every gauge through `gauge` when `interval` has passed since the last refresh.
    func update(now: MonotonicInstant, gauge: (String, [(String, String)]) -> Gauge) {
        let previous = state.withLock { s -> MonotonicInstant?? in
            if let last = s.lastUpdate, now - last < interval { return .none }
            defer { s.lastUpdate = now }
            return .some(s.lastUpdate)
        }
        guard case .some(let previousUpdate) = previous else { return }
        if state.withLock({ $0.startup == nil }) { ready() }
        let startup: Double? = state.withLock { s in
            guard !s.startupRecorded, let value = s.startup else { return nil }
            s.startupRecorded = true
            return value
        }
        if let startup { gauge("process_startup_seconds", []).record(startup) }

        let cores = OnlineCPUs.count
        gauge("cpu_logical_cores", []).record(cores)
        let processCPU = try? ProcessCPUClock().elapsed()
        let systemCPU = SystemFigures.read("/proc/stat").flatMap(SystemFigures.parseCPUTimes)
        let (previousCPU, previousSystem) = state.withLock { s in
            defer {
                s.lastProcessCPU = processCPU
                s.lastSystemCPU = systemCPU
            }
            return (s.lastProcessCPU, s.lastSystemCPU)
        }
        if let processCPU, let previousCPU, let previousUpdate, now > previousUpdate {
            let wall = (now - previousUpdate).secondsDouble
            gauge("process_cpu_percent", []).record(100 * (processCPU - previousCPU).secondsDouble / wall)
        }
        if let systemCPU, let previousSystem, systemCPU.total > previousSystem.total {
            let busy = Double(systemCPU.busy &- previousSystem.busy)
            gauge("system_cpu_percent", []).record(100 * busy / Double(systemCPU.total - previousSystem.total))
        }
        for (cpu, hertz) in SystemFigures.cpuFrequencies(cpus: cores) {
            gauge("cpu_frequency_hertz", [("cpu", "\(cpu)")]).record(hertz)
        }
        if let stats = try? ProcessStats.current() {
            gauge("process_resident_memory_bytes", []).record(Int64(clamping: stats.residentBytes))
            gauge("process_threads", []).record(stats.threadCount)
        }
        if let available = SystemFigures.read("/proc/meminfo").flatMap(SystemFigures.parseMemoryAvailable) {
            gauge("memory_available_bytes", []).record(Int64(clamping: available))
        }
        if let fds = SystemFigures.openFileDescriptors() { gauge("process_open_fds", []).record(fds) }
        let numa = NUMATopology.current()
        if numa.isAvailable {
            for node in numa.nodes {
                gauge("numa_memory_bytes", [("node", "\(node.id)")]).record(node.memoryBytes)
                gauge("numa_memory_free_bytes", [("node", "\(node.id)")]).record(node.freeBytes)
            }
        }
    }
}
