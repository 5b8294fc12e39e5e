import ArgumentParser
import BenchGoals
import CSampler
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Stallwatch
import StallwatchPolicy
import StallwatchReport
import Synchronization

/// `bench probe`: what a heartbeat costs the loop, and what an idle watchdog costs the process.
/// Runs a default watchdog through one sampled stall, so every lazily touched structure is resident.
private func residentMemoryExercise() throws {
    let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(200)))
    let probe = watchdog.makeProbe(name: "rss")
    try watchdog.start()
    let stall = Thread {
        probe.busy()
        let end = Workload.now() + 400_000_000
        while Workload.now() < end {}
        probe.idle()
    }
    stall.start()
    usleep(700_000)
    watchdog.stop()
}

struct ProbeBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Cost of a heartbeat busy/idle pair, and the CPU of an idle watchdog.",
        discussion: """
        The pair cost is timed over --pairs busy()/idle() pairs, --rounds times; median and spread
        are printed (goal: ≤ 25 ns a pair). The idle watchdog watches one idle loop with the default
        configuration (2 s threshold; pool threads scanned every 40 ms unless the pool rests) for
        --idle-seconds, in alternating rounds with pool-job watching on and off, while a burst of
        tasks every --pool-task-interval-ms keeps two pool threads alive (an idle service); its
        thread's CPU clock gives its cost (goal: ≤ 0.01 % of a core), its schedstat its wake-ups,
        and the watcher's own counters its scans and /proc reads a second. The same rounds run
        again with a burst every --busy-pool-interval-ms (a pool that never rests; no goal).
        Every goal ends the output as a PASS/MISS line (--idle-seconds 0: the idle and memory goals
        are not measured, so MISS); --json FILE writes them with the figures as a BenchRecord.
        """
    )

    @Option(help: "busy/idle pairs per round.")
    var pairs: Int = 20_000_000

    @Option(help: "Timing rounds.")
    var rounds: Int = 7

    @Option(name: .customLong("idle-seconds"), help: "How long to watch the idle watchdog.")
    var idleSeconds: Double = 60

    @Option(name: .customLong("pool-task-interval-ms"), help: "How often the idle service runs a burst of tasks on the pool while the idle watchdog is measured (pool threads exit after about 5 s without work).")
    var poolTaskIntervalMilliseconds: Int = 1000

    @Option(name: .customLong("busy-pool-interval-ms"), help: "The same rounds again with a burst this often (a pool that never rests; 0: not measured).")
    var busyPoolIntervalMilliseconds: Int = 20

    func validate() throws {
        guard poolTaskIntervalMilliseconds >= 1, poolTaskIntervalMilliseconds <= 4000 else {
            throw ValidationError("--pool-task-interval-ms must be 1…4000")
        }
        guard busyPoolIntervalMilliseconds >= 0, busyPoolIntervalMilliseconds <= 4000 else {
            throw ValidationError("--busy-pool-interval-ms must be 0…4000")
        }
        guard pairs >= 1000 else { throw ValidationError("--pairs must be ≥ 1000") }
        guard rounds >= 1 else { throw ValidationError("--rounds must be ≥ 1") }
        guard idleSeconds >= 0 else { throw ValidationError("--idle-seconds must be ≥ 0") }
    }

    @Option(help: "Also write the goals and figures as JSON (a BenchRecord) to this file.")
    var json: String?

    func run() throws {
        let start = RunStart.now()
        print("bench probe: \(start.machine.oneLine)")
        let probe = HeartbeatProbe(name: "bench")
        probe.busy()
        probe.idle()
        var perPair: [Double] = []
        for _ in 0..<rounds {
            let t0 = Workload.now()
            for _ in 0..<pairs {
                probe.busy()
                probe.idle()
            }
            perPair.append(Double(Workload.now() - t0) / Double(pairs))
        }
        let s = Spread(perPair)
        print(String(format: "heartbeat busy/idle pair: %.1f ns median [%.1f…%.1f] over %d rounds of %d pairs",
                     s.median, s.min, s.max, rounds, pairs))
        var report = ProbeReport(pairs: pairs, rounds: rounds, pairNanoseconds: s)
        if idleSeconds > 0 { try measureIdle(into: &report) }
        let goals = ProbeGoals.evaluate(report.goalFigures)
        GoalLines.print(goals, keys: ProbeGoals.keys)
        if let json {
            try BenchRecord(bench: "probe", start: start, goals: goals, figures: report).write(to: json)
        }
    }

    /// The memory the default configuration adds, then the idle watchdog in alternating rounds.
    private func measureIdle(into report: inout ProbeReport) throws {
        // What Stallwatch adds to resident memory: before the sampler exists, and after a watchdog
        // has run and sampled a stall (its slots, map tables and a ring touched).
        // Anonymous (private) memory is what Stallwatch allocates; file-backed pages are code of the
        // Swift runtime and libraries faulted in on first use, shared and reclaimable.
        let before = residentKiB()
        try residentMemoryExercise()
        let after = residentKiB()
        let anon = after.anon - before.anon, file = after.file - before.file
        print("resident memory added by the default configuration (sampler, watchdog, one stall sampled): " +
              "\(anon) KiB private (RssAnon); plus \(file) KiB of shared code pages faulted in (RssFile)")
        (report.addedAnonymousKiB, report.addedFileKiB) = (anon, file)
        // Pool threads exist in any Swift service. An idle one still runs a task now and then (a
        // timer, a metrics flush): a burst every --pool-task-interval-ms keeps two pool threads alive
        // (they exit after about 5 s without work), so the pool-job watcher has threads to scan, as it
        // would in production. Then the same rounds with the pool given work every
        // --busy-pool-interval-ms: a pool that never rests.
        let interval = Atomic<Int>(poolTaskIntervalMilliseconds)
        let keepWarm = Task.detached {
            while !Task.isCancelled {
                async let a: Int = (0..<100).reduce(0, +)
                async let b: Int = (0..<100).reduce(0, +)
                _ = await a + b
                try? await Task.sleep(for: .milliseconds(interval.load(ordering: .relaxed)))
            }
        }
        defer { keepWarm.cancel() }
        let loads = [poolTaskIntervalMilliseconds] + (busyPoolIntervalMilliseconds > 0 ? [busyPoolIntervalMilliseconds] : [])
        let roundSeconds = idleSeconds / Double(4 * loads.count)
        var figures: [Int: [Bool: [IdleWatchdogFigures]]] = [:]
        for load in loads {
            interval.store(load, ordering: .relaxed)
            usleep(UInt32(min(load, 1000)) * 1000)
            // Alternating rounds, pool watching on (the default) and off, so drift hits both alike.
            for watchPool in [true, false, true, false] {
                figures[load, default: [:]][watchPool, default: []].append(
                    try idleWatchdogFigures(seconds: roundSeconds, watchPoolJobs: watchPool))
            }
        }
        print("idle watchdog (default configuration: 2 s threshold; one idle heartbeat loop), \(Fmt.f(roundSeconds, 0)) s rounds, "
              + "alternating; wake-ups = its thread's schedstat timeslices; pool wakes = enqueues that ended a rest of the pool:")
        for load in loads {
            print(load == poolTaskIntervalMilliseconds
                  ? "  idle service (a burst of tasks every \(load) ms keeps pool threads alive; the goal's figure):"
                  : "  pool given work every \(load) ms (never at rest; no goal):")
            for watchPool in [true, false] {
                let list = figures[load]?[watchPool] ?? []
                let cpu = Spread(list.map(\.cpuPercent)), wake = Spread(list.map(\.wakeupsPerSecond))
                let scans = Spread(list.map(\.scansPerSecond)), proc = Spread(list.map(\.procReadsPerSecond))
                let clocks = Spread(list.map(\.clockReadsPerSecond)), pool = list.map(\.poolThreads).max() ?? 0
                let poolWakes = Spread(list.map { $0.poolWakesPerSecond ?? 0 })
                print(String(format: "    pool jobs %@: %.4f %% of a core [%.4f…%.4f], %.1f wake-ups/s [%.1f…%.1f]; pool scans %.1f/s, pool wakes %.1f/s, /proc reads %.1f/s [%.1f…%.1f], CPU-clock reads %.1f/s (%d pool threads); load %@",
                             watchPool ? "watched (default)" : "not watched", cpu.median, cpu.min, cpu.max, wake.median, wake.min, wake.max,
                             scans.median, poolWakes.median, proc.median, proc.min, proc.max, clocks.median, pool,
                             list.map(\.load).joined(separator: " | ")))
            }
        }
        report.idleRoundSeconds = roundSeconds
        report.poolTaskIntervalMilliseconds = poolTaskIntervalMilliseconds
        report.idleWatchingPoolJobs = figures[poolTaskIntervalMilliseconds]?[true] ?? []
        report.idleNotWatchingPoolJobs = figures[poolTaskIntervalMilliseconds]?[false] ?? []
        report.idleWatchdogPercentOfCore = report.idleWatchingPoolJobs.isEmpty ? nil : Spread(report.idleWatchingPoolJobs.map(\.cpuPercent)).median
        report.idleWithoutPoolJobsPercentOfCore = report.idleNotWatchingPoolJobs.isEmpty ? nil
            : Spread(report.idleNotWatchingPoolJobs.map(\.cpuPercent)).median
        if busyPoolIntervalMilliseconds > 0 {
            report.busyPoolIntervalMilliseconds = busyPoolIntervalMilliseconds
            report.busyPoolWatchingPoolJobs = figures[busyPoolIntervalMilliseconds]?[true] ?? []
            report.busyPoolNotWatchingPoolJobs = figures[busyPoolIntervalMilliseconds]?[false] ?? []
        }
    }

    /// The watchdog thread's CPU (% of a core) and wake-ups over `seconds`, and the pool scans'
    /// counts, watching one idle loop with the default configuration (2 s threshold).
    private func idleWatchdogFigures(seconds: Double, watchPoolJobs: Bool) throws -> IdleWatchdogFigures {
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(watchPoolJobs: watchPoolJobs))
        _ = watchdog.makeProbe(name: "idle-loop")
        try watchdog.start()
        defer { watchdog.stop() }
        usleep(200_000)
        guard let tid = try ThreadList.current().first(where: { (try? ThreadInfo.read($0).name) == "stallwatch" }) else {
            throw ValidationError("the watchdog thread was not found")
        }
        let clock = ThreadCPUClock(tid)
        let c0 = try clock.elapsed()
        let s0 = try ThreadInfo.schedStat(tid)
        let k0 = PoolScanCost.counts
        let p0 = sw_pool_wake_count()
        let w0 = Workload.now()
        usleep(UInt32(seconds * 1_000_000))
        let cpu = try clock.elapsed() - c0
        let s1 = try ThreadInfo.schedStat(tid)
        let k1 = PoolScanCost.counts
        let p1 = sw_pool_wake_count()
        let wall = Double(Workload.now() - w0) / 1e9
        let pool = (try? ThreadList.current().filter { ((try? ThreadInfo.read($0).name) ?? "").hasSuffix("-qos") }.count) ?? 0
        return IdleWatchdogFigures(cpuPercent: Double(cpu.clampedNanoseconds) / 1e9 / wall * 100,
                                   wakeupsPerSecond: Double(s1.timeslices - s0.timeslices) / wall,
                                   scansPerSecond: Double(k1.scans - k0.scans) / wall,
                                   procReadsPerSecond: Double(k1.procReads - k0.procReads) / wall,
                                   clockReadsPerSecond: Double(k1.cpuClockReads - k0.cpuClockReads) / wall,
                                   poolWakesPerSecond: Double(p1 - p0) / wall,
                                   poolThreads: pool, load: MachineDescription.current().loadAverage)
    }
}

/// One round of the idle watchdog.
struct IdleWatchdogFigures: Codable {
    var cpuPercent: Double
    var wakeupsPerSecond: Double
    var scansPerSecond: Double
    var procReadsPerSecond: Double
    var clockReadsPerSecond: Double
    /// Enqueues that woke the watchdog from a rest of the pool (``PoolRest``), a second.
    var poolWakesPerSecond: Double?
    var poolThreads: Int
    var load: String
}

/// RssAnon and RssFile of this process in KiB, from /proc/self/status.
private func residentKiB() -> (anon: Int, file: Int) {
    let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    func field(_ name: String) -> Int {
        text.split(separator: "\n").first { $0.hasPrefix(name) }
            .flatMap { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first }
            .flatMap { Int($0) } ?? 0
    }
    return (field("RssAnon:"), field("RssFile:"))
}

/// Everything `bench probe` measured (the `figures` of its BenchRecord).
struct ProbeReport: Codable {
    var pairs: Int
    var rounds: Int
    /// A busy()+idle() pair, ns: median [min…max] over the rounds.
    var pairNanoseconds: Spread
    /// Resident memory the default configuration added after one sampled stall, KiB (nil: not measured).
    var addedAnonymousKiB: Int?
    var addedFileKiB: Int?
    var idleRoundSeconds: Double?
    var poolTaskIntervalMilliseconds: Int?
    /// The idle watchdog's rounds with pool-job watching on (the default) and off.
    var idleWatchingPoolJobs: [IdleWatchdogFigures] = []
    var idleNotWatchingPoolJobs: [IdleWatchdogFigures] = []
    /// The same rounds with the pool given work every `busyPoolIntervalMilliseconds` (no goal).
    var busyPoolIntervalMilliseconds: Int?
    var busyPoolWatchingPoolJobs: [IdleWatchdogFigures]?
    var busyPoolNotWatchingPoolJobs: [IdleWatchdogFigures]?

    /// The idle watchdog's CPU, median of its rounds, % of a core: the default configuration
    /// (pool jobs watched), and without pool-job watching.
    var idleWatchdogPercentOfCore: Double?
    var idleWithoutPoolJobsPercentOfCore: Double?

    var goalFigures: ProbeFigures {
        ProbeFigures(pairNanoseconds: pairNanoseconds.median, idleWatchdogPercentOfCore: idleWatchdogPercentOfCore,
                     addedAnonymousKiB: addedAnonymousKiB)
    }
}
