import BenchSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// timer/empty: the timer ring's own mechanism (a timer on each target's CPU clock, the sampling
/// signal, Stallwatch's dispatcher) with a handler that records only its time — the floor the ring
/// is compared with. Nothing wakes to read it: the ticks are collected when the phase ends.
final class TimerFloorDriver: SamplingDriver {
    /// Ticks the floor's buffer keeps (pre-touched at install): enough for a sweep phase at 1 ms.
    static let capacity: UInt32 = 16_384

    /// Installs the floor's handler. Must run before the sampler is installed, so that the sampler's
    /// dispatcher chains ticks it does not recognise to it.
    static func install() throws {
        let rc = bench_timer_floor_install(SIGPROF, capacity)
        guard rc == 0 else { throw BenchError("installing the timer/empty handler failed: \(rc)") }
    }

    private let targets: [Int32]
    private let interval: Int
    private let log: SampleLog
    private var timers: [Int32] = []
    private var cursor: UInt64 = 0

    init(targets: [Int32], intervalNanoseconds: Int, log: SampleLog) {
        self.targets = targets
        self.interval = intervalNanoseconds
        self.log = log
    }

    func begin() throws {
        cursor = bench_timer_floor_head() // ticks left by an earlier phase are not this one's
        for target in targets {
            let t = bench_timer_floor_start(SIGPROF, target, Int64(interval))
            guard t >= 0 else {
                timers.forEach { bench_timer_floor_stop($0) }
                throw BenchError("bench_timer_floor_start(\(target)) failed: \(t)")
            }
            timers.append(t)
        }
    }

    func end() -> DriverCost {
        timers.forEach { bench_timer_floor_stop($0) }
        timers = []
        let max = Int(Self.capacity)
        var times = [UInt64](repeating: 0, count: max)
        var tids = [Int32](repeating: 0, count: max)
        var count: UInt64 = 0
        cursor = bench_timer_floor_read(cursor, &times, &tids, UInt64(max), &count)
        for i in 0..<Int(count) {
            log.record(Sample(tid: tids[i], takenAt: Int(times[i]), latency: 0, handler: 0, frames: 0))
        }
        return DriverCost(samples: Int(count), failures: 0, samplerCPUNanoseconds: 0, samplerMallocs: 0)
    }
}
