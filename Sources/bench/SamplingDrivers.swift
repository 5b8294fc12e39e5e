import BenchSupport
import CSampler
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Stallwatch
import Synchronization

/// One sample as the bench sees it.
struct Sample {
    var tid: Int32
    /// CLOCK_MONOTONIC when the handler started (sw_stack_t.taken_at_ns).
    var takenAt: Int
    /// Request sent → answer seen (0 for the timer ring: nobody waits).
    var latency: Int
    var handler: Int
    var frames: Int
}

/// Per-sample figures, collected without allocating on the sampling path (capacity reserved up front).
final class SampleLog: Sendable {
    private let storage: Mutex<(samples: [Sample], dropped: Int)>

    init(capacity: Int) {
        var s: [Sample] = []
        s.reserveCapacity(capacity)
        storage = Mutex((s, 0))
    }

    func record(_ sample: Sample) {
        storage.withLock { s in
            // Within the reserved capacity appending does not allocate.
            if s.samples.count < s.samples.capacity {
                s.samples.append(sample)
            } else {
                s.dropped += 1
            }
        }
    }

    /// The samples logged since the last take, and how many did not fit.
    func take() -> (samples: [Sample], dropped: Int) {
        storage.withLock { s in
            let out = (Array(s.samples), s.dropped)
            s.samples.removeAll(keepingCapacity: true)
            s.dropped = 0
            return out
        }
    }
}

/// What a sampling phase cost the sampler side.
struct DriverCost {
    var samples: Int
    var failures: Int
    var samplerCPUNanoseconds: Int
    /// Allocations the sampler thread made after its setup, until it stopped.
    var samplerMallocs: Int
}

/// Drives sampling of the workload during one phase.
protocol SamplingDriver: AnyObject {
    /// Starts sampling; returns once the driver's thread is past its setup.
    func begin() throws
    func end() -> DriverCost
}

/// Runs `body` on a new joinable pthread.
private func spawn(_ body: @escaping @Sendable () -> Void) throws -> PlatformThread.Handle {
    do throws(PlatformThread.StartFailure) {
        return try PlatformThread.start(body)
    } catch {
        throw BenchError("pthread_create failed: \(error.code)")
    }
}

/// A sampler thread that wakes every interval and asks each target for its stack (request/answer).
final class ThreadDriver: SamplingDriver, @unchecked Sendable {
    // @unchecked: `thread` is written by begin() and read by end(), both on the bench main thread.
    private let targets: [Int32]
    private let interval: Int
    private let unwinder: sw_unwinder_t
    private let maxFrames: UInt32
    private let log: SampleLog
    private let running = Atomic<Bool>(false)
    private let ready = Atomic<Bool>(false)
    private let samples = Atomic<Int>(0)
    private let failures = Atomic<Int>(0)
    private let cpu = Atomic<Int>(0)
    private let mallocs = Atomic<Int>(0)
    private var thread: PlatformThread.Handle?

    init(targets: [Int32], intervalNanoseconds: Int, unwinder: sw_unwinder_t, maxFrames: Int, log: SampleLog) {
        self.targets = targets
        self.interval = intervalNanoseconds
        self.unwinder = unwinder
        self.maxFrames = UInt32(maxFrames)
        self.log = log
    }

    func begin() throws {
        running.store(true, ordering: .releasing)
        thread = try spawn { [self] in loop() }
        while !ready.load(ordering: .acquiring) { usleep(200) }
    }

    private func loop() {
        let me = ThreadID.current.rawValue
        let stack = UnsafeMutablePointer<sw_stack_t>.allocate(capacity: 1)
        defer { stack.deallocate() }
        let cpuStart = threadCPUNanoseconds(me)
        let mallocStart = bench_malloc_count_thread()
        ready.store(true, ordering: .releasing)
        var next = Workload.now()
        while running.load(ordering: .acquiring) {
            next += interval
            while !MonotonicSleep.until(next) {}
            for target in targets {
                if !running.load(ordering: .acquiring) { break }
                let rc = sw_capture(target, unwinder, maxFrames, 100_000_000, stack)
                if rc == 0 {
                    samples.add(1, ordering: .relaxed)
                    log.record(Sample(tid: target, takenAt: Int(stack.pointee.taken_at_ns),
                                      latency: Int(stack.pointee.latency_ns), handler: Int(stack.pointee.handler_ns),
                                      frames: Int(stack.pointee.count)))
                } else {
                    failures.add(1, ordering: .relaxed)
                }
            }
            // A late wake-up (more targets than fit in an interval) starts the next round at once.
            next = max(next, Workload.now() - interval)
        }
        mallocs.store(Int(bench_malloc_count_thread() - mallocStart), ordering: .relaxed)
        cpu.store(threadCPUNanoseconds(me) - cpuStart, ordering: .releasing)
    }

    func end() -> DriverCost {
        running.store(false, ordering: .releasing)
        thread?.join()
        return DriverCost(samples: samples.load(ordering: .relaxed), failures: failures.load(ordering: .relaxed),
                          samplerCPUNanoseconds: cpu.load(ordering: .acquiring),
                          samplerMallocs: mallocs.load(ordering: .relaxed))
    }
}

/// The reader thread both ring drivers share: it wakes once per `drainEvery` (the watchdog's check
/// period), drains every ring through `drain`, logs the samples and counts its own CPU and mallocs.
final class RingReader: @unchecked Sendable {
    // @unchecked: `thread` is written by start() and read by stop(), both on the bench main thread.
    /// Drains ring `index` into the buffer: (samples read, samples lost).
    typealias Drain = @Sendable (_ index: Int, _ buffer: UnsafeMutablePointer<sw_stack_t>) -> (count: Int, lost: Int)
    private let drainEvery: Int
    private let capacity: Int
    private let log: SampleLog
    private let running = Atomic<Bool>(false)
    private let ready = Atomic<Bool>(false)
    private let cpu = Atomic<Int>(0)
    private let drained = Atomic<Int>(0)
    private let lost = Atomic<Int>(0)
    private let mallocs = Atomic<Int>(0)
    private var thread: PlatformThread.Handle?

    init(drainEveryNanoseconds: Int, capacity: Int, log: SampleLog) {
        self.drainEvery = drainEveryNanoseconds
        self.capacity = capacity
        self.log = log
    }

    /// Starts the reader over `rings` rings; returns once it runs. `untilEmpty`: read a ring again
    /// while a read fills the buffer (the kernel's perf ring can hold more than one buffer).
    func start(rings: Int, untilEmpty: Bool, drain: @escaping Drain) throws {
        running.store(true, ordering: .releasing)
        thread = try spawn { [self] in loop(rings: rings, untilEmpty: untilEmpty, drain: drain) }
        while !ready.load(ordering: .acquiring) { usleep(200) }
    }

    /// Stops the reader after one last drain; what it read and cost.
    func stop() -> DriverCost {
        running.store(false, ordering: .releasing)
        thread?.join()
        return DriverCost(samples: drained.load(ordering: .relaxed), failures: lost.load(ordering: .relaxed),
                          samplerCPUNanoseconds: cpu.load(ordering: .acquiring),
                          samplerMallocs: mallocs.load(ordering: .relaxed))
    }

    private func loop(rings: Int, untilEmpty: Bool, drain: Drain) {
        let me = ThreadID.current.rawValue
        let buffer = UnsafeMutablePointer<sw_stack_t>.allocate(capacity: capacity)
        defer { buffer.deallocate() }
        let cpuStart = threadCPUNanoseconds(me)
        let mallocStart = bench_malloc_count_thread()
        ready.store(true, ordering: .releasing)
        var next = Workload.now()
        var stopping = false
        while !stopping {
            next += drainEvery
            while running.load(ordering: .acquiring) && !MonotonicSleep.until(next) {}
            stopping = !running.load(ordering: .acquiring)
            for k in 0..<rings {
                var count = 0
                repeat {
                    let (n, l) = drain(k, buffer)
                    count = n
                    if l > 0 { lost.add(l, ordering: .relaxed) }
                    for i in 0..<count {
                        log.record(Sample(tid: buffer[i].tid, takenAt: Int(buffer[i].taken_at_ns), latency: 0,
                                          handler: Int(buffer[i].handler_ns), frames: Int(buffer[i].count)))
                    }
                    drained.add(count, ordering: .relaxed)
                } while untilEmpty && count == capacity
            }
        }
        mallocs.store(Int(bench_malloc_count_thread() - mallocStart), ordering: .relaxed)
        cpu.store(threadCPUNanoseconds(me) - cpuStart, ordering: .releasing)
    }
}

/// A kernel timer on each target's CPU clock signals the target itself; a reader thread drains the
/// rings once per `drainEvery` (the watchdog's check period) — no thread wakes per sample.
final class TimerDriver: SamplingDriver, @unchecked Sendable {
    // @unchecked: `rings` is written by begin() before the reader thread starts and read by it;
    // end() runs on the bench main thread after stopping the reader.
    private let targets: [Int32]
    private let interval: Int
    private var rings: [Int32] = []
    private let capacity: UInt32
    private let reader: RingReader
    private var cursors: UnsafeMutablePointer<UInt64>?

    init(targets: [Int32], intervalNanoseconds: Int, drainEveryNanoseconds: Int, log: SampleLog) {
        self.targets = targets
        self.interval = intervalNanoseconds
        // One drain period plus slack at the fastest rate the kernel allows (HZ = 250 here).
        let perDrain = Double(drainEveryNanoseconds) / Double(max(intervalNanoseconds, 4_000_000))
        capacity = UInt32(min(Int(SW_RING_MAX_CAPACITY), max(16, Int(perDrain * 2) + 8)))
        reader = RingReader(drainEveryNanoseconds: drainEveryNanoseconds, capacity: Int(capacity), log: log)
    }

    func begin() throws {
        rings = []
        for target in targets {
            var ring = sw_ring_start(target, Int64(interval), SW_RING_CLOCK_THREAD_CPU, 128, capacity)
            // A thread inside a handler (a late signal from the previous phase) shows SIGPROF in its
            // SigBlk for that instant: sw_ring_start reads it as "blocked". Ask again briefly.
            var attempts = 0
            while ring == Int32(SW_ERR_SIGNAL_BLOCKED) && attempts < 50 {
                usleep(1000)
                attempts += 1
                ring = sw_ring_start(target, Int64(interval), SW_RING_CLOCK_THREAD_CPU, 128, capacity)
            }
            guard ring >= 0 else {
                for r in rings { _ = sw_ring_stop(r) }
                throw BenchError("sw_ring_start(\(target)) failed: \(ring)")
            }
            rings.append(ring)
        }
        let rings = rings, capacity = capacity
        let allocated = UnsafeMutablePointer<UInt64>.allocate(capacity: rings.count)
        allocated.initialize(repeating: 0, count: rings.count)
        cursors = allocated
        nonisolated(unsafe) let cursors = allocated   // the reader thread's alone until end()
        try reader.start(rings: rings.count, untilEmpty: false) { k, buffer in
            var count: UInt32 = 0
            let lost = sw_ring_read(rings[k], &cursors[k], buffer, capacity, &count)
            return (Int(count), Int(max(lost, 0)))
        }
    }

    func end() -> DriverCost {
        for ring in rings { _ = sw_ring_stop(ring) }
        let cost = reader.stop()
        cursors?.deallocate()
        cursors = nil
        return cost
    }
}

/// A perf task-clock event on each target (no signal); a reader thread drains the kernel's rings
/// once per `drainEvery`, as the watchdog would — no thread wakes per sample.
final class PerfDriver: SamplingDriver, @unchecked Sendable {
    // @unchecked: `rings` is written by begin() before the reader thread starts and read by it;
    // end() runs on the bench main thread after stopping the reader.
    private let targets: [Int32]
    private let interval: Int
    private let stackBytes: UInt32
    private var rings: [Int32] = []
    private let capacity: UInt32
    private let reader: RingReader

    init(targets: [Int32], intervalNanoseconds: Int, drainEveryNanoseconds: Int, stackBytes: UInt32, log: SampleLog) {
        self.targets = targets
        self.interval = intervalNanoseconds
        self.stackBytes = stackBytes
        let perDrain = Double(drainEveryNanoseconds) / Double(max(intervalNanoseconds, 1_000_000))
        capacity = UInt32(min(4096, max(16, Int(perDrain * 2) + 8)))
        reader = RingReader(drainEveryNanoseconds: drainEveryNanoseconds, capacity: Int(capacity), log: log)
    }

    func begin() throws {
        rings = []
        for target in targets {
            let ring = sw_perf_ring_start(target, Int64(interval), 128, capacity, stackBytes)
            guard ring >= 0 else {
                for r in rings { _ = sw_perf_ring_release(r) }
                throw BenchError("sw_perf_ring_start(\(target)) failed: \(ring) (\(String(cString: strerror(-ring))))")
            }
            rings.append(ring)
        }
        let rings = rings, capacity = capacity
        // A perf sample has no handler time (handler_ns is 0): nothing ran on the target.
        try reader.start(rings: rings.count, untilEmpty: true) { k, buffer in
            var count: UInt32 = 0
            let lost = sw_perf_ring_read(rings[k], buffer, capacity, &count)
            return (Int(count), Int(max(lost, 0)))
        }
    }

    func end() -> DriverCost {
        for ring in rings { _ = sw_perf_ring_stop(ring) }
        let cost = reader.stop()
        for ring in rings { _ = sw_perf_ring_release(ring) }
        return cost
    }
}

/// Runs `body` on a new pthread (for drivers outside this file's private helper).
func spawnThread(_ body: @escaping @Sendable () -> Void) throws -> PlatformThread.Handle { try spawn(body) }

/// A benchmark failure with a message for the user.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
