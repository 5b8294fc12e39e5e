import ArgumentParser
import BenchGoals
import Foundation
import Glibc
import Stallwatch
import StallwatchPolicy
import StallwatchReport

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
        configuration (2 s threshold; pool threads scanned every 40 ms) for --idle-seconds, in four
        alternating rounds with pool-job watching on and off, while a light task load keeps two
        pool threads alive; its thread's CPU clock gives its cost (goal: ≤ 0.01 % of a core), its
        schedstat its wake-ups, and the watcher's own counters its scans and /proc reads a second.
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

    @Option(name: .customLong("pool-task-interval-ms"), help: "How often the light task load runs a burst of tasks on the pool while the idle watchdog is measured (pool threads exit after about 5 s without work).")
    var poolTaskIntervalMilliseconds: Int = 20

    func validate() throws {
        guard poolTaskIntervalMilliseconds >= 1, poolTaskIntervalMilliseconds <= 4000 else {
            throw ValidationError("--pool-task-interval-ms must be 1…4000")
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
        // Pool threads exist in any Swift service: a light task load keeps two of them alive, so the
        // pool-job watcher has threads to scan, as it would in production.
        let interval = poolTaskIntervalMilliseconds
        let keepWarm = Task.detached {
            while !Task.isCancelled {
                async let a: Int = (0..<100).reduce(0, +)
                async let b: Int = (0..<100).reduce(0, +)
                _ = await a + b
                try? await Task.sleep(for: .milliseconds(interval))
            }
        }
        defer { keepWarm.cancel() }
        // Alternating rounds, pool watching on (the default) and off, so drift hits both alike.
        var figures: [Bool: [IdleWatchdogFigures]] = [true: [], false: []]
        let roundSeconds = idleSeconds / 4
        for watchPool in [true, false, true, false] {
            figures[watchPool, default: []].append(try idleWatchdogFigures(seconds: roundSeconds, watchPoolJobs: watchPool))
        }
        print("idle watchdog (default configuration: 2 s threshold; one idle heartbeat loop; a burst of tasks every \(poolTaskIntervalMilliseconds) ms keeps pool threads alive), "
              + "\(Fmt.f(roundSeconds, 0)) s rounds, alternating; wake-ups = its thread's schedstat timeslices:")
        for watchPool in [true, false] {
            let list = figures[watchPool] ?? []
            let cpu = Spread(list.map(\.cpuPercent)), wake = Spread(list.map(\.wakeupsPerSecond))
            let scans = Spread(list.map(\.scansPerSecond)), proc = Spread(list.map(\.procReadsPerSecond))
            let clocks = Spread(list.map(\.clockReadsPerSecond)), pool = list.map(\.poolThreads).max() ?? 0
            print(String(format: "  pool jobs %@: %.4f %% of a core [%.4f…%.4f], %.1f wake-ups/s [%.1f…%.1f]; pool scans %.1f/s, /proc reads %.1f/s [%.1f…%.1f], CPU-clock reads %.1f/s (%d pool threads); load %@",
                         watchPool ? "watched (default)" : "not watched", cpu.median, cpu.min, cpu.max, wake.median, wake.min, wake.max,
                         scans.median, proc.median, proc.min, proc.max, clocks.median, pool,
                         list.map(\.load).joined(separator: " | ")))
        }
        report.idleRoundSeconds = roundSeconds
        report.poolTaskIntervalMilliseconds = poolTaskIntervalMilliseconds
        report.idleWatchingPoolJobs = figures[true] ?? []
        report.idleNotWatchingPoolJobs = figures[false] ?? []
        report.idleWatchdogPercentOfCore = report.idleWatchingPoolJobs.isEmpty ? nil : Spread(report.idleWatchingPoolJobs.map(\.cpuPercent)).median
        report.idleWithoutPoolJobsPercentOfCore = report.idleNotWatchingPoolJobs.isEmpty ? nil
            : Spread(report.idleNotWatchingPoolJobs.map(\.cpuPercent)).median
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
        let w0 = Workload.now()
        usleep(UInt32(seconds * 1_000_000))
        let cpu = try clock.elapsed() - c0
        let s1 = try ThreadInfo.schedStat(tid)
        let k1 = PoolScanCost.counts
        let wall = Double(Workload.now() - w0) / 1e9
        let pool = (try? ThreadList.current().filter { ((try? ThreadInfo.read($0).name) ?? "").hasSuffix("-qos") }.count) ?? 0
        return IdleWatchdogFigures(cpuPercent: Double(cpu.clampedNanoseconds) / 1e9 / wall * 100,
                                   wakeupsPerSecond: Double(s1.timeslices - s0.timeslices) / wall,
                                   scansPerSecond: Double(k1.scans - k0.scans) / wall,
                                   procReadsPerSecond: Double(k1.procReads - k0.procReads) / wall,
                                   clockReadsPerSecond: Double(k1.cpuClockReads - k0.cpuClockReads) / wall,
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

    /// The idle watchdog's CPU, median of its rounds, % of a core: the default configuration
    /// (pool jobs watched), and without pool-job watching.
    var idleWatchdogPercentOfCore: Double?
    var idleWithoutPoolJobsPercentOfCore: Double?

    var goalFigures: ProbeFigures {
        ProbeFigures(pairNanoseconds: pairNanoseconds.median, idleWatchdogPercentOfCore: idleWatchdogPercentOfCore,
                     addedAnonymousKiB: addedAnonymousKiB)
    }
}
