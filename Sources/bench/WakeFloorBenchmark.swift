import ArgumentParser
import CSampler
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Stallwatch
import Synchronization

/// `bench wake-floor`: what waking a thread costs on this machine, with nothing done per wake-up.
/// The watchdog's idle cost can go no lower than its wake-ups × this.
struct WakeFloorBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wake-floor",
        abstract: "CPU of a thread that only wakes up, every 40 ms and every 450 ms (the watchdog's idle floor), and one that wakes every second to read what a pool scan must.",
        discussion: """
        A thread waits on a semaphore with a timeout, as the watchdog thread does between rounds,
        and does nothing else; its CPU clock and schedstat give the CPU per wake-up and the % of a
        core, for each period, --rounds alternating rounds of --seconds.
        A third row is the floor of the idle service in `bench probe` (a burst of pool tasks every
        second): a thread woken once a second, after each burst, that reads only what tells a
        scan the pool is back at rest (the thread list, and each worker's CPU clock, syscall and
        schedstat files, kept open) and draws no conclusion. Beside it, the same wake-up with no
        reads, in alternating rounds.
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
        // As bench probe's idle service: two tasks a second keep two pool workers alive.
        let keepWarm = Task.detached {
            while !Task.isCancelled {
                async let a: Int = (0..<100).reduce(0, +)
                async let b: Int = (0..<100).reduce(0, +)
                _ = await a + b
                try? await Task.sleep(for: .milliseconds(1000))
            }
        }
        defer { keepWarm.cancel() }
        let modes = [Mode(period: 40), Mode(period: 450), Mode(period: 1000), Mode(period: 1000, readsPoolScan: true)]
        var perWake: [Mode: [Double]] = [:], percent: [Mode: [Double]] = [:], rates: [Mode: [Double]] = [:]
        var workers = 0
        var workersRead: [Double] = []
        for _ in 0..<rounds {
            for mode in modes {
                let r = try measure(mode)
                perWake[mode, default: []].append(r.microsecondsPerWake)
                percent[mode, default: []].append(r.percentOfCore)
                rates[mode, default: []].append(r.wakeupsPerSecond)
                if mode.readsPoolScan {
                    workers = max(workers, r.workers)
                    workersRead.append(r.workersReadPerWake)
                }
            }
        }
        for mode in modes {
            let w = Spread(perWake[mode] ?? []), p = Spread(percent[mode] ?? []), r = Spread(rates[mode] ?? [])
            let what = mode.readsPoolScan
                ? String(format: ", reading a pool scan's minimum (%d workers, the files of %.1f a wake-up)", workers, Spread(workersRead).median) : ""
            print(String(format: "wake every %d ms%@: %.1f wake-ups/s, %.1f µs CPU per wake-up [%.1f…%.1f], %.4f %% of a core [%.4f…%.4f]",
                         mode.period, what, r.median, w.median, w.min, w.max, p.median, p.min, p.max))
        }
        if let json {
            let rows = modes.map { mode in
                WakeFloorRow(periodMilliseconds: mode.period, wakeupsPerSecond: Spread(rates[mode] ?? []).median,
                             microsecondsPerWake: Spread(perWake[mode] ?? []), percentOfCore: Spread(percent[mode] ?? []),
                             poolScanReads: mode.readsPoolScan ? true : nil, poolWorkers: mode.readsPoolScan ? workers : nil,
                             poolWorkersReadPerWake: mode.readsPoolScan ? Spread(workersRead).median : nil)
            }
            try BenchRecord(bench: "wake-floor", start: start, goals: [:], figures: rows).write(to: json)
        }
        let scanFloor = Spread(percent[Mode(period: 1000, readsPoolScan: true)] ?? []).median
        print(String(format: "the idle-watchdog goal (≤ 0.01 %% of a core) with a pool burst every second, woken once per burst: floor %.4f %% — %@",
                     scanFloor, scanFloor <= 0.01 ? "reachable" : "unreachable here: the wake-up and the scan's reads alone cost more"))
        let floor40 = Spread(percent[Mode(period: 40)] ?? []).median
        print(String(format: "the idle-watchdog goal (≤ 0.01 %% of a core) at one round every 40 ms: floor %.4f %% — %@",
                     floor40, floor40 <= 0.01 ? "reachable" : "unreachable here: the bare wake-ups alone cost more"))
    }

    /// A wake-up period, and whether each wake-up reads what a pool scan must.
    private struct Mode: Hashable {
        var period: Int
        var readsPoolScan = false
    }

    private func measure(_ mode: Mode) throws -> (wakeupsPerSecond: Double, microsecondsPerWake: Double, percentOfCore: Double, workers: Int, workersReadPerWake: Double) {
        let tid = Atomic<Int32>(0)
        let stop = Atomic<Bool>(false)
        let workerCount = Atomic<Int>(0)
        let filesRead = Atomic<Int>(0), readWakes = Atomic<Int>(0)
        let semaphore = DispatchSemaphore(value: 0)
        let thread = Thread {
            tid.store(ThreadID.current.rawValue, ordering: .releasing)
            var reads = mode.readsPoolScan ? PoolScanReads() : nil
            while !stop.load(ordering: .acquiring) {
                _ = semaphore.wait(timeout: .now() + .milliseconds(mode.period))
                if let count = reads?.read() {
                    workerCount.store(count, ordering: .relaxed)
                    filesRead.store(reads?.filesRead ?? 0, ordering: .relaxed)
                    readWakes.add(1, ordering: .relaxed)
                }
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
        let perWake = Double(filesRead.load(ordering: .relaxed)) / Double(max(readWakes.load(ordering: .relaxed), 1))
        return (wakes / wall, wakes > 0 ? cpu / wakes * 1e6 : .nan, cpu / wall * 100, workerCount.load(ordering: .relaxed), perWake)
    }
}

/// What a pool scan must read to learn that the workers which ran a burst are back waiting for
/// work: the thread list, then per worker its CPU clock, and, when the clock moved (it ran), its
/// syscall and schedstat files (kept open, as the watchdog keeps them). Workers are found by name once.
private struct PoolScanReads {
    private let directory = TaskDirectory()
    private var tids: [ThreadID] = []
    private var workers: [ThreadID: TaskFiles] = [:]
    /// Threads named otherwise, not read again (the watchdog looks at them ever more rarely).
    private var others: Set<ThreadID> = []
    /// Each worker's CPU clock at its last read.
    private var lastCPU: [ThreadID: UInt64] = [:]
    /// Workers whose files were read (their clock had moved), over every wake-up.
    private(set) var filesRead = 0

    /// Returns the workers read.
    mutating func read() -> Int {
        guard (try? ThreadList.current(into: &tids, directory: directory.descriptor)) != nil else { return 0 }
        var count = 0
        for tid in tids {
            if workers[tid] == nil {
                guard !others.contains(tid) else { continue }
                guard let name = try? ThreadInfo.read(tid).name, name.hasSuffix("-qos") else {
                    others.insert(tid)
                    continue
                }
                workers[tid] = TaskFiles(tid)
            }
            guard let files = workers[tid] else { continue }
            var cpu: UInt64 = 0
            var call = sw_thread_syscall_t()
            var run: UInt64 = 0, wait: UInt64 = 0, slices: UInt64 = 0
            count += 1
            // A worker whose clock has not moved has not run: the watchdog reads nothing more of it.
            guard sw_thread_cpu_time_ns(tid.rawValue, &cpu) == 0, cpu != lastCPU[tid] else { continue }
            lastCPU[tid] = cpu
            _ = files.syscall(&call)
            _ = files.schedstat(run: &run, wait: &wait, timeslices: &slices)
            filesRead += 1
        }
        return count
    }
}

/// One period's floor, as `--json` writes it.
struct WakeFloorRow: Encodable {
    var periodMilliseconds: Int
    var wakeupsPerSecond: Double
    var microsecondsPerWake: Spread
    var percentOfCore: Spread
    /// Whether each wake-up read what a pool scan must (``PoolScanReads``), and of how many workers.
    var poolScanReads: Bool?
    var poolWorkers: Int?
    /// Workers whose files a wake-up read (their CPU clock had moved), median over the rounds.
    var poolWorkersReadPerWake: Double?
}
