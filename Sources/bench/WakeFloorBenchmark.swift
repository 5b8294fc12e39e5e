import ArgumentParser
import Dispatch
import Foundation
import Glibc
import Stallwatch
import Synchronization

/// `bench wake-floor`: what waking a thread costs on this machine, with nothing done per wake-up.
/// The watchdog's idle cost can go no lower than its wake-ups × this.
struct WakeFloorBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wake-floor",
        abstract: "CPU of a thread that only wakes up, every 40 ms and every 450 ms (the watchdog's idle floor).",
        discussion: """
        A thread waits on a semaphore with a timeout, as the watchdog thread does between rounds,
        and does nothing else; its CPU clock and schedstat give the CPU per wake-up and the % of a
        core, for each period, --rounds alternating rounds of --seconds.
        """
    )

    @Option(help: "Alternating rounds per period.")
    var rounds: Int = 3
    @Option(help: "Seconds per round.")
    var seconds: Double = 5
    @Option(help: "Also write the figures as JSON (a BenchRecord, no goals: a floor) to this file.")
    var json: String?

    func validate() throws {
        guard rounds >= 1 else { throw ValidationError("--rounds must be ≥ 1") }
        guard seconds >= 1 else { throw ValidationError("--seconds must be ≥ 1") }
    }

    func run() throws {
        let start = RunStart.now()
        print("bench wake-floor: \(start.machine.oneLine)")
        let periods = [40, 450]
        var perWake: [Int: [Double]] = [:], percent: [Int: [Double]] = [:], rates: [Int: [Double]] = [:]
        for _ in 0..<rounds {
            for period in periods {
                let r = try measure(periodMilliseconds: period)
                perWake[period, default: []].append(r.microsecondsPerWake)
                percent[period, default: []].append(r.percentOfCore)
                rates[period, default: []].append(r.wakeupsPerSecond)
            }
        }
        for period in periods {
            let w = Spread(perWake[period] ?? []), p = Spread(percent[period] ?? []), r = Spread(rates[period] ?? [])
            print(String(format: "wake every %d ms: %.1f wake-ups/s, %.1f µs CPU per wake-up [%.1f…%.1f], %.4f %% of a core [%.4f…%.4f]",
                         period, r.median, w.median, w.min, w.max, p.median, p.min, p.max))
        }
        if let json {
            let rows = periods.map { period in
                WakeFloorRow(periodMilliseconds: period, wakeupsPerSecond: Spread(rates[period] ?? []).median,
                             microsecondsPerWake: Spread(perWake[period] ?? []), percentOfCore: Spread(percent[period] ?? []))
            }
            try BenchRecord(bench: "wake-floor", start: start, goals: [:], figures: rows).write(to: json)
        }
        let floor40 = Spread(percent[40] ?? []).median
        print(String(format: "the idle-watchdog goal (≤ 0.01 %% of a core) at one round every 40 ms: floor %.4f %% — %@",
                     floor40, floor40 <= 0.01 ? "reachable" : "unreachable here: the bare wake-ups alone cost more"))
    }

    private func measure(periodMilliseconds: Int) throws -> (wakeupsPerSecond: Double, microsecondsPerWake: Double, percentOfCore: Double) {
        let tid = Atomic<Int32>(0)
        let stop = Atomic<Bool>(false)
        let semaphore = DispatchSemaphore(value: 0)
        let thread = Thread {
            tid.store(ThreadID.current.rawValue, ordering: .releasing)
            while !stop.load(ordering: .acquiring) {
                _ = semaphore.wait(timeout: .now() + .milliseconds(periodMilliseconds))
            }
        }
        thread.start()
        while tid.load(ordering: .acquiring) == 0 { usleep(1000) }
        usleep(200_000)
        let id = ThreadID(rawValue: tid.load(ordering: .acquiring))
        let clock = ThreadCPUClock(id)
        let c0 = try clock.elapsed(), s0 = try ThreadInfo.schedStat(id), t0 = Workload.now()
        usleep(UInt32(seconds * 1_000_000))
        let c1 = try clock.elapsed(), s1 = try ThreadInfo.schedStat(id), t1 = Workload.now()
        stop.store(true, ordering: .releasing)
        semaphore.signal()
        let wall = Double(t1 - t0) / 1e9
        let cpu = Double((c1 - c0).clampedNanoseconds) / 1e9
        let wakes = Double(s1.timeslices - s0.timeslices)
        return (wakes / wall, wakes > 0 ? cpu / wakes * 1e6 : .nan, cpu / wall * 100)
    }
}

/// One period's floor, as `--json` writes it.
struct WakeFloorRow: Encodable {
    var periodMilliseconds: Int
    var wakeupsPerSecond: Double
    var microsecondsPerWake: Spread
    var percentOfCore: Spread
}
