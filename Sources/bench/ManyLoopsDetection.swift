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

/// One case of `bench detect`'s many-loops table: `loops` heartbeat loops on threads of their own,
/// `stalled` of which stall at the same instant, `repeats` times.
struct ManyLoopsCase: Codable {
    enum Kind: String, Codable { case sleep, spin }

    var loops: Int
    var stalled: Int
    var kind: Kind
    var thresholdMilliseconds: Int
    var repeats: Int

    /// More spinning threads than cores: the watchdog itself competes for a CPU.
    var saturated: Bool { kind == .spin && stalled >= ProcessInfo.processInfo.activeProcessorCount }
}

/// What one case measured.
struct ManyLoopsResult: Codable {
    var stalls: Int
    var reported: Int
    var missed: Int
    var duplicates: Int
    var latencyP50Milliseconds: Double
    var latencyP99Milliseconds: Double
    var latencyMaxMilliseconds: Double
    var worstLatenessMilliseconds: Double
    /// A bare thread at the watchdog's nice value, sleeping 40 ms at a time among the same loops
    /// (saturated cases only): how late it woke, p99 and worst, ms — the scheduler's floor for the
    /// watchdog's own lateness.
    var bareWakeLatenessP99Milliseconds: Double?
    var bareWakeLatenessMaxMilliseconds: Double?
    /// The watchdog thread's CPU (its CPU clock) over the rounds' stall windows, per stalled loop, % of a core.
    var watchdogCPUPercentPerStalledLoop: Double
    /// Samples in the stalls' final reports per second of stall: all loops together, and per loop.
    var samplesPerSecond: Double
    var samplesPerSecondPerLoop: Double
    /// Signal-driven samples (spinning loops only) × the per-sample cost given with --sample-cost-us,
    /// per stalled loop, % of a core: an estimate (the handler runs on the stalled thread itself).
    var samplerCPUPercentPerStalledLoopEstimate: Double
    /// Stalls whose first report (the stall event) came without a stack: their thread had no sample
    /// by the threshold, and either waited for a CPU (the report does not wait for it) or
    /// did not answer the one-off capture.
    var firstReportsWithoutStack: Int = 0
    /// Of those, the ones whose final report has no stack either.
    var finalReportsWithoutStack: Int = 0
}

/// The fields of a written report that the many-loops table reads back.
private struct WrittenReport: Decodable {
    var loopName: String?
    var sampleCount: Int
    var durationNanoseconds: Int64
    var durationIsFinal: Bool?
    var id: String?
}

/// Reads and removes the reports in `directory`: (samples, stall seconds) summed over final reports,
/// and the ids of final reports without a sample.
private func collectReports(_ directory: String) -> (samples: Int, seconds: Double, reports: Int, stackless: Set<String>) {
    let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
    var samples = 0, seconds = 0.0, reports = 0
    var stackless = Set<String>()
    for name in files where name.hasSuffix(".json") {
        let path = directory + "/" + name
        if let data = FileManager.default.contents(atPath: path),
           let r = try? JSONDecoder().decode(WrittenReport.self, from: data), r.durationIsFinal == true {
            samples += r.sampleCount
            seconds += Double(r.durationNanoseconds) / 1e9
            reports += 1
            if r.sampleCount == 0, let id = r.id { stackless.insert(id) }
            try? FileManager.default.removeItem(atPath: path)
        }
    }
    return (samples, seconds, reports, stackless)
}

/// Runs one case. Every loop ticks (busy 1 ms, idle 50 ms) while it is not stalled, so the
/// watchdog sees live, healthy loops beside the stalled ones; reports go to a temporary directory,
/// as in a service.
func runManyLoops(_ c: ManyLoopsCase, sampleCostMicroseconds: Double = 20) throws -> ManyLoopsResult {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-detect-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    // First stall event per loop name in the current round, and how many; the id of its report
    // when that report had no stack.
    let firstEvent = Mutex<[String: (at: Int, count: Int, stackless: String?)]>([:])
    let lateness = Mutex<Double>(0)
    let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(c.thresholdMilliseconds)),
                                reportDirectory: directory) { event in
        guard event.kind == .stall, let report = event.report, let loop = report.loopName else { return }
        let now = Workload.now()
        firstEvent.withLock { table in
            let previous = table[loop]
            table[loop] = (previous?.at ?? now, (previous?.count ?? 0) + 1,
                           previous.map(\.stackless) ?? (report.sampleCount == 0 ? report.id : nil))
        }
        let late = Double(report.watchdogLatenessNanoseconds) / 1e6
        lateness.withLock { $0 = max($0, late) }
    }
    let probes = (0..<c.loops).map { watchdog.makeProbe(name: "loop-\($0)") }
    try watchdog.start()
    defer { watchdog.stop() }
    usleep(50_000)
    let watchdogThread = try ThreadList.current().first { (try? ThreadInfo.read($0).name) == "stallwatch" }
    let watchdogClock = watchdogThread.map(ThreadCPUClock.init)
    var watchdogCPU = 0.0, window = 0.0
    var samples = 0, stallSeconds = 0.0, reports = 0

    let stallUntil = Atomic<Int>(0)     // while now < this, loops below `stalled` stall
    let stallStart = Atomic<Int>(0)
    let busyAt = Mutex<[Int: Int]>([:])  // loop index -> when it called busy() for this round's stall
    let stop = Atomic<Bool>(false)
    let stallDuration = (2 * c.thresholdMilliseconds + 100) * 1_000_000
    var threads: [Thread] = []
    for (index, probe) in probes.enumerated() {
        let thread = Thread {
            var handled = 0
            while !stop.load(ordering: .acquiring) {
                let start = stallStart.load(ordering: .acquiring)
                if index < c.stalled, start != handled, Workload.now() < stallUntil.load(ordering: .acquiring) {
                    handled = start
                    // Timed from busy() on: a thread preempted before it (64 spinners on 2 cores: up
                    // to a whole rotation of the run queue, ~100 ms) has not begun to stall yet.
                    probe.busy()
                    let began = Workload.now()
                    busyAt.withLock { $0[index] = began }
                    let end = began + stallDuration
                    switch c.kind {
                    case .sleep: while Workload.now() < end { usleep(UInt32(max((end - Workload.now()) / 1000, 1))) }
                    case .spin: while Workload.now() < end {}
                    }
                    probe.idle()
                    continue
                }
                probe.busy()
                usleep(1000)
                probe.idle()
                usleep(50_000)
            }
        }
        thread.stackSize = 256 * 1024
        thread.start()
        threads.append(thread)
    }
    usleep(300_000)
    let floorProbe = c.saturated ? WakeLatenessProbe() : nil
    var latencies: [Double] = []
    var missed = 0, duplicates = 0, firstStackless = 0, finalStackless = 0
    for _ in 0..<c.repeats {
        firstEvent.withLock { $0.removeAll() }
        busyAt.withLock { $0.removeAll() }
        _ = collectReports(directory)
        let cpu0 = (try? watchdogClock?.elapsed()) ?? nil
        let start = Workload.now()
        // Loops pick the round up when they next wake; on saturated CPUs that can take a while, so
        // the round stays open until every stalled loop has begun (bounded), and each is timed
        // from its own busy().
        stallUntil.store(start + 5_000_000_000, ordering: .releasing)
        stallStart.store(start, ordering: .releasing)
        while busyAt.withLock({ $0.count }) < c.stalled && Workload.now() < start + 5_000_000_000 { usleep(10_000) }
        stallUntil.store(0, ordering: .releasing)
        let lastBegan = busyAt.withLock { $0.values.max() } ?? start
        // The stall, then enough for late reports and for loops to settle.
        let settle = lastBegan + stallDuration + 600_000_000
        while Workload.now() < settle { usleep(10_000) }
        if let cpu0, let cpu1 = (try? watchdogClock?.elapsed()) ?? nil {
            watchdogCPU += Double((cpu1 - cpu0).clampedNanoseconds) / 1e9
            window += Double(Workload.now() - start) / 1e9
        }
        let written = collectReports(directory)
        samples += written.samples
        stallSeconds += written.seconds
        reports += written.reports
        let events = firstEvent.withLock { $0 }
        let began = busyAt.withLock { $0 }
        for index in 0..<c.stalled {
            if let e = events["loop-\(index)"], let at = began[index] {
                latencies.append(Double(e.at - at) / 1e6)
                duplicates += e.count - 1
                if let id = e.stackless {
                    firstStackless += 1
                    if written.stackless.contains(id) { finalStackless += 1 }
                }
            } else {
                missed += 1
            }
        }
    }
    let floorLateness = floorProbe?.finish()
    stop.store(true, ordering: .releasing)
    usleep(100_000)
    let stalls = c.stalled * c.repeats
    return ManyLoopsResult(
        stalls: stalls, reported: stalls - missed, missed: missed, duplicates: duplicates,
        latencyP50Milliseconds: Stats.percentile(latencies, 50), latencyP99Milliseconds: Stats.percentile(latencies, 99),
        latencyMaxMilliseconds: latencies.max() ?? .nan, worstLatenessMilliseconds: lateness.withLock { $0 },
        bareWakeLatenessP99Milliseconds: floorLateness.map { Stats.percentile($0, 99) },
        bareWakeLatenessMaxMilliseconds: floorLateness?.max(),
        watchdogCPUPercentPerStalledLoop: window > 0 ? watchdogCPU / window * 100 / Double(c.stalled) : .nan,
        // All loops together: the per-loop rate × the loops stalled per round.
        samplesPerSecond: stallSeconds > 0 ? Double(samples) / stallSeconds * Double(reports) / Double(c.repeats) : .nan,
        samplesPerSecondPerLoop: stallSeconds > 0 ? Double(samples) / stallSeconds : .nan,
        samplerCPUPercentPerStalledLoopEstimate: c.kind == .spin && stallSeconds > 0
            ? Double(samples) / stallSeconds * sampleCostMicroseconds / 1e6 * 100 : 0,
        firstReportsWithoutStack: firstStackless, finalReportsWithoutStack: finalStackless)
}
