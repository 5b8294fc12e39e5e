import BenchSupport
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

/// Allocations on the watchdog's side of one sampled stall, counted by the bench's own malloc for
/// the watchdog thread alone (by tid) and for the whole process.
struct WatchdogStallAllocations: Codable {
    /// busy() → the stall event: sampling while suspected (ring drains, /proc scans) and the first report.
    var beforeDetection: Int
    /// The stall event → its end: drains and scans while the loop stays stalled.
    var whileStalled: Int
    /// The end → 300 ms later: the final report (call tree of every sample).
    var finalReport: Int
    /// The whole process over the same window (the report writer's queue encodes and writes files).
    var processWide: Int
    var stallMilliseconds: Double
    var thresholdMilliseconds: Int
    /// Allocations on the watchdog thread while every loop was idle, and the rounds it ran meanwhile
    /// (its thread's timeslices): an idle check should allocate nothing.
    var idleMallocs: Int = 0
    var idleRounds: Int = 0

    /// Everything the watchdog thread allocated during the stall.
    var watchdogThread: Int { beforeDetection + whileStalled + finalReport }
}

/// Runs a watchdog (reports written to a temporary directory, as in a service) through one warm-up
/// stall and then one measured stall of a spinning loop, sampled every 50 ms.
func measureWatchdogStallAllocations(thresholdMilliseconds: Int = 500, stallMilliseconds: Int = 1500, idleSeconds: Double = 2) throws -> WatchdogStallAllocations {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-sampler-\(getpid())").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let watchdogTid = Atomic<Int32>(0)
    let atStall = Atomic<Int>(-1)
    let atEnd = Atomic<Int>(-1)
    // Runs on the watchdog thread: reads a counter and stores it, nothing that allocates.
    let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(thresholdMilliseconds)),
                                reportDirectory: directory) { event in
        let tid = watchdogTid.load(ordering: .acquiring)
        switch event.kind {
        case .stall, .filtered: atStall.store(Int(bench_malloc_count_tid(tid)), ordering: .releasing)
        case .stallEnded: atEnd.store(Int(bench_malloc_count_tid(tid)), ordering: .releasing)
        default: break
        }
    }
    let probe = watchdog.makeProbe(name: "bench-stall")
    try watchdog.start()
    defer { watchdog.stop() }
    usleep(100_000)
    guard let tid = try ThreadList.current().first(where: { (try? ThreadInfo.read($0).name) == "stallwatch" }) else {
        throw BenchError("the watchdog thread was not found")
    }
    watchdogTid.store(tid.rawValue, ordering: .releasing)

    func stall(measured: Bool) throws -> WatchdogStallAllocations? {
        atStall.store(-1, ordering: .relaxed)
        atEnd.store(-1, ordering: .relaxed)
        let began = Atomic<Int>(0)
        let thread = Thread {
            began.store(Workload.now(), ordering: .releasing)
            probe.busy()
            let end = Workload.now() + stallMilliseconds * 1_000_000
            while Workload.now() < end {}
            probe.idle()
        }
        thread.start()
        while began.load(ordering: .acquiring) == 0 { usleep(1000) }
        let w0 = Int(bench_malloc_count_tid(tid.rawValue))
        let p0 = Int(bench_malloc_count_process())
        let deadline = Workload.now() + (stallMilliseconds + 3 * thresholdMilliseconds + 2000) * 1_000_000
        while atEnd.load(ordering: .acquiring) < 0 && Workload.now() < deadline { usleep(5000) }
        usleep(300_000)
        let w3 = Int(bench_malloc_count_tid(tid.rawValue))
        let p3 = Int(bench_malloc_count_process())
        let w1 = atStall.load(ordering: .acquiring), w2 = atEnd.load(ordering: .acquiring)
        guard measured else { return nil }
        guard w1 >= 0, w2 >= 0 else { throw BenchError("the watchdog did not report the measured stall") }
        return WatchdogStallAllocations(beforeDetection: w1 - w0, whileStalled: w2 - w1, finalReport: w3 - w2,
                                        processWide: p3 - p0, stallMilliseconds: Double(stallMilliseconds),
                                        thresholdMilliseconds: thresholdMilliseconds)
    }
    // The first stall makes lazily built structures exist (symbol tables, the report directory).
    _ = try stall(measured: false)
    // Idle, after the warm-up stall built what is built once: what a round costs with nothing to do.
    usleep(300_000)
    let i0 = Int(bench_malloc_count_tid(tid.rawValue)), r0 = (try? ThreadInfo.schedStat(tid).timeslices) ?? 0
    usleep(UInt32(idleSeconds * 1_000_000))
    let i1 = Int(bench_malloc_count_tid(tid.rawValue)), r1 = (try? ThreadInfo.schedStat(tid).timeslices) ?? 0
    guard var result = try stall(measured: true) else { throw BenchError("no measured stall") }
    result.idleMallocs = i1 - i0
    result.idleRounds = Int(r1 - r0)
    return result
}
