import Dispatch
import Glibc
import MetricsTestKit
import StallwatchPolicy
import StallwatchReport
import Testing
@testable import Stallwatch

@Suite("swift-metrics", .serialized)
struct MetricsTests {
    @Test("a CPU stall counts once under its loop and cause, with its duration, samples, lag and rounds")
    func stallCountedWithLabels() throws {
        let backend = TestMetrics()
        let metrics = try WatchdogMetrics(factory: backend)
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(300)), metrics: metrics) {
            log.append($0)
        }
        let probe = watchdog.makeProbe(name: "metrics-loop")
        try watchdog.start()
        // A few short busy periods first: lag without a stall.
        for _ in 0..<5 {
            probe.busy()
            usleep(20_000)
            probe.idle()
            usleep(150_000)
        }
        stallOnce(probe, milliseconds: 800, log: log)
        usleep(300_000)
        watchdog.stop()

        // The cause is the report's own (cpuBound on a quiet machine; a loaded or sanitized run may
        // see the watchdog wake late and call it otherwise): the metric must carry the same one.
        let report = try #require(log.stalls.first)
        let cause = report.cause?.kind.rawValue ?? StallCauseKind.unknown.rawValue
        let stalls = try backend.expectCounter("stallwatch_stalls_total", [("loop", "metrics-loop"), ("cause", cause)])
        #expect(stalls.totalValue == 1)
        #expect(backend.counterTotal(label: "stallwatch_stalls_total") == 1, "another loop or cause was counted")
        let duration = try backend.expectTimer("stallwatch_stall_duration_seconds", [("loop", "metrics-loop"), ("cause", cause)])
        let recorded = try #require(duration.lastValue)
        #expect(recorded >= 700_000_000 && recorded < 3_000_000_000, "stall duration \(recorded) ns for an 800 ms stall")
        let lag = try backend.expectTimer("stallwatch_loop_lag_seconds", [("loop", "metrics-loop")])
        #expect(lag.values.count >= 3, "busy periods seen: \(lag.values)")
        #expect(lag.values.contains { $0 >= 700_000_000 }, "the stall's busy period is not in the lag: \(lag.values)")
        #expect(backend.counterTotal(label: "stallwatch_samples_total") > 0)
        let lateness = try backend.expectTimer("stallwatch_watchdog_lateness_seconds")
        #expect(lateness.values.count >= 5)
        #expect(try backend.expectGauge("stallwatch_signal_owned").lastValue == 1)
    }

    @Test("every ping's latency is a lag value; pings that wait behind work show it")
    func pingLag() throws {
        let backend = TestMetrics()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .seconds(1), checkPeriod: .milliseconds(50),
                                                                         watchPoolJobs: false),
                                    metrics: try WatchdogMetrics(factory: backend))
        let queue = DispatchQueue(label: "metrics-queue")
        watchdog.monitor(PingProbe(name: "queue") { queue.async(execute: $0) })
        try watchdog.start()
        // 2.4 s of 200 ms jobs, each queueing the next: a ping waits up to 200 ms, never a stall.
        @Sendable func work(_ left: Int) {
            guard left > 0 else { return }
            queue.async {
                usleep(200_000)
                work(left - 1)
            }
        }
        work(12)
        usleep(2_600_000)
        watchdog.stop()
        let lag = try backend.expectTimer("stallwatch_loop_lag_seconds", [("loop", "queue")])
        #expect(lag.values.count >= 3, "pings answered: \(lag.values.count)")
        #expect(lag.values.contains { $0 >= 10_000_000 }, "no ping waited behind the work: \(lag.values)")
        #expect(lag.values.allSatisfy { $0 < 400_000_000 }, "a ping waited longer than one job: \(lag.values)")
        #expect(backend.counterTotal(label: "stallwatch_stalls_total") == 0)
    }

    @Test("process figures: cores, CPU, memory, threads, descriptors and start-up are set and plausible")
    func processFigures() throws {
        let backend = TestMetrics()
        let process = try ProcessMetrics(interval: .milliseconds(100))
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .seconds(1), checkPeriod: .milliseconds(50),
                                                                         watchPoolJobs: false),
                                    metrics: try WatchdogMetrics(process: process, factory: backend))
        watchdog.monitor(watchdog.makeProbe(name: "idle"))
        try watchdog.start()
        // Updates come with the watchdog's rounds: every 0.9 × threshold while nothing is busy.
        stallwatchFixtureCPUStall(milliseconds: 2_200) // some process CPU to see
        watchdog.stop()
        let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        #expect(try backend.expectGauge("stallwatch_cpu_logical_cores").lastValue == Double(cores))
        let cpu = try #require(try backend.expectGauge("stallwatch_process_cpu_percent").values.max())
        #expect(cpu > 20 && cpu <= Double(cores) * 100 + 5, "process CPU \(cpu) % while spinning one core")
        let system = try #require(try backend.expectGauge("stallwatch_system_cpu_percent").lastValue)
        #expect(system >= 0 && system <= 100)
        let rss = try #require(try backend.expectGauge("stallwatch_process_resident_memory_bytes").lastValue)
        #expect(rss > 1_000_000)
        #expect(try #require(try backend.expectGauge("stallwatch_memory_available_bytes").lastValue) > 0)
        #expect(try #require(try backend.expectGauge("stallwatch_process_threads").lastValue) >= 2)
        #expect(try #require(try backend.expectGauge("stallwatch_process_open_fds").lastValue) >= 3)
        let startup = try #require(try backend.expectGauge("stallwatch_process_startup_seconds").lastValue)
        #expect(startup > 0 && startup < 3600)
        if NUMATopology.current().isAvailable {
            #expect(try backend.expectGauge("stallwatch_numa_memory_bytes", [("node", "0")]).lastValue ?? 0 > 0)
        }
    }

    @Test("bad metric configurations are refused, naming what is wrong")
    func badConfiguration() {
        #expect(throws: MetricsConfigurationError.invalidPrefix("9lives")) { try WatchdogMetrics(prefix: "9lives") }
        #expect(throws: MetricsConfigurationError.invalidPrefix("my-service")) { try WatchdogMetrics(prefix: "my-service") }
        #expect(throws: MetricsConfigurationError.invalidPrefix("")) { try WatchdogMetrics(prefix: "") }
        #expect(throws: MetricsConfigurationError.invalidInterval(.milliseconds(10))) { try ProcessMetrics(interval: .milliseconds(10)) }
    }

    @Test("/proc parsing: the cpu line, MemAvailable, a start time after a command name with spaces and parentheses")
    func procParsing() {
        let stat = "cpu  100 20 30 400 50 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
        #expect(SystemFigures.parseCPUTimes(Substring(stat)) == .init(busy: 100 + 20 + 30 + 6 + 7 + 8, total: 621))
        #expect(SystemFigures.parseCPUTimes("intr 1 2 3") == nil)
        // Unwrapped before #expect: comparing a UInt64? inside #expect trips an AddressSanitizer
        // stack-buffer-overflow report in the toolchain's AnyHashable thunk (not in our code).
        let available = SystemFigures.parseMemoryAvailable("MemTotal: 100 kB\nMemAvailable:   2048 kB\n")
        #expect(available.map { $0 == 2048 * 1024 } == true, "MemAvailable \(String(describing: available))")
        let selfStat = "4242 (a (weird) name) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 777 19 20"
        let start = SystemFigures.parseStartTicks(Substring(selfStat))
        #expect(start.map { $0 == 777 } == true, "start ticks \(String(describing: start))")
        #expect(SystemFigures.parseStartTicks("4242 (short) S 1 2").map { _ in false } ?? true)
    }

    @Test("capture timeouts: only what the sampler's count grew by since the first round is counted")
    func captureTimeoutsCountTheGrowth() throws {
        let backend = TestMetrics()
        let metrics = try WatchdogMetrics(factory: backend)
        metrics.recordCaptureTimeouts(total: 5)   // timeouts before this watchdog: not its own
        metrics.recordCaptureTimeouts(total: 8)
        metrics.recordCaptureTimeouts(total: 8)
        metrics.recordCaptureTimeouts(total: 9)
        #expect(backend.counterTotal(label: "stallwatch_capture_timeouts_total") == 4)
    }

    @Test("the watchdog's own cost: one wake-up a round, and the signals sent since its first round")
    func wakeupsAndSignals() throws {
        let backend = TestMetrics()
        let metrics = try WatchdogMetrics(factory: backend)
        metrics.recordSignalsSent(total: 40)   // another requester's, before this watchdog
        for _ in 0..<3 { metrics.recordRound(lateness: .zero, watchdogCPU: .zero) }
        metrics.recordSignalsSent(total: 47)
        metrics.recordSignalsSent(total: 47)
        #expect(backend.counterTotal(label: "stallwatch_watchdog_wakeups_total") == 3)
        #expect(backend.counterTotal(label: "stallwatch_watchdog_signals_total") == 7)
    }
}
