import CSampler
import Glibc
import Stallwatch
import Synchronization

/// Per-sample figures, collected without allocating on the sampling path.
final class SampleLog: Sendable {
    private let storage: Mutex<(latency: [Int], handler: [Int], frames: [Int])>

    init(capacity: Int) {
        var l: [Int] = [], h: [Int] = [], f: [Int] = []
        l.reserveCapacity(capacity)
        h.reserveCapacity(capacity)
        f.reserveCapacity(capacity)
        storage = Mutex((l, h, f))
    }

    func record(latency: Int, handler: Int, frames: Int) {
        storage.withLock { s in
            // Within the reserved capacity appending does not allocate.
            if s.latency.count < s.latency.capacity {
                s.latency.append(latency)
                s.handler.append(handler)
                s.frames.append(frames)
            }
        }
    }

    func take() -> (latency: [Int], handler: [Int], frames: [Int]) {
        storage.withLock { s in
            let out = s
            s.latency.removeAll(keepingCapacity: true)
            s.handler.removeAll(keepingCapacity: true)
            s.frames.removeAll(keepingCapacity: true)
            return out
        }
    }
}

/// What a sampling phase cost the sampler side.
struct DriverCost {
    var samples: Int
    var failures: Int
    var samplerCPUNanoseconds: Int
}

/// Drives sampling of the workload during one phase.
protocol SamplingDriver: AnyObject {
    func begin()
    func end() -> DriverCost
}

/// A sampler thread that wakes every interval and asks the target for its stack (request/answer).
final class ThreadDriver: SamplingDriver, @unchecked Sendable {
    // @unchecked: `thread` is written by begin() and read by end() on the same (bench main) thread.
    private let target: Int32
    private let interval: Int
    private let unwinder: sw_unwinder_t
    private let maxFrames: UInt32
    private let log: SampleLog
    private let running = Atomic<Bool>(false)
    private let samples = Atomic<Int>(0)
    private let failures = Atomic<Int>(0)
    private let cpu = Atomic<Int>(0)
    private var thread = pthread_t()

    init(target: Int32, interval: Duration, unwinder: sw_unwinder_t, maxFrames: Int, log: SampleLog) {
        self.target = target
        self.interval = Int(interval.components.seconds) * 1_000_000_000 + Int(interval.components.attoseconds / 1_000_000_000)
        self.unwinder = unwinder
        self.maxFrames = UInt32(maxFrames)
        self.log = log
    }

    func begin() {
        samples.store(0, ordering: .relaxed)
        failures.store(0, ordering: .relaxed)
        running.store(true, ordering: .releasing)
        let box = Unmanaged.passRetained(self)
        pthread_create(&thread, nil, { arg in
            guard let arg else { return nil }
            let driver = Unmanaged<ThreadDriver>.fromOpaque(arg).takeRetainedValue()
            driver.loop()
            return nil
        }, box.toOpaque())
    }

    private func loop() {
        let me = ThreadID.current.rawValue
        let cpuStart = threadCPUNanoseconds(me)
        let stack = UnsafeMutablePointer<sw_stack_t>.allocate(capacity: 1)
        defer { stack.deallocate() }
        var next = Workload.now()
        while running.load(ordering: .acquiring) {
            next += interval
            var ts = timespec(tv_sec: next / 1_000_000_000, tv_nsec: next % 1_000_000_000)
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
            if !running.load(ordering: .acquiring) { break }
            let rc = sw_capture(target, unwinder, maxFrames, 100_000_000, stack)
            if rc == 0 {
                samples.add(1, ordering: .relaxed)
                log.record(latency: Int(stack.pointee.latency_ns), handler: Int(stack.pointee.handler_ns),
                           frames: Int(stack.pointee.count))
            } else {
                failures.add(1, ordering: .relaxed)
            }
        }
        cpu.store(threadCPUNanoseconds(me) - cpuStart, ordering: .releasing)
    }

    func end() -> DriverCost {
        running.store(false, ordering: .releasing)
        pthread_join(thread, nil)
        return DriverCost(samples: samples.load(ordering: .relaxed), failures: failures.load(ordering: .relaxed),
                          samplerCPUNanoseconds: cpu.load(ordering: .acquiring))
    }
}

/// A kernel timer on the target's CPU clock signals the target itself; a reader thread drains the
/// ring once per `drainEvery` (the watchdog's check period) — no thread wakes per sample.
final class TimerDriver: SamplingDriver, @unchecked Sendable {
    // @unchecked: `ring` and `thread` are touched only by begin()/end() on the bench main thread.
    private let sampler: StackSampler
    private let target: Int32
    private let interval: Duration
    private let drainEvery: Int
    private let log: SampleLog
    private let running = Atomic<Bool>(false)
    private let cpu = Atomic<Int>(0)
    private let drained = Atomic<Int>(0)
    private var ring: Int32 = -1
    private var thread = pthread_t()
    private let capacity: UInt32

    init(sampler: StackSampler, target: Int32, interval: Duration, drainEvery: Duration, log: SampleLog) {
        self.sampler = sampler
        self.target = target
        self.interval = interval
        self.drainEvery = Int(drainEvery.components.seconds) * 1_000_000_000 + Int(drainEvery.components.attoseconds / 1_000_000_000)
        self.log = log
        // Enough room for one drain period plus slack at the fastest rate the kernel allows.
        let perDrain = Double(self.drainEvery) / max(Double(interval.components.attoseconds) / 1e9 + Double(interval.components.seconds) * 1e9, 1)
        self.capacity = UInt32(min(Int(SW_RING_MAX_CAPACITY), max(16, Int(perDrain * 2) + 8)))
    }

    func begin() {
        drained.store(0, ordering: .relaxed)
        let ns = Int64(interval.components.seconds) * 1_000_000_000 + Int64(interval.components.attoseconds / 1_000_000_000)
        ring = sw_ring_start(target, ns, SW_RING_CLOCK_THREAD_CPU, 128, capacity)
        precondition(ring >= 0, "sw_ring_start failed: \(ring)")
        running.store(true, ordering: .releasing)
        let box = Unmanaged.passRetained(self)
        pthread_create(&thread, nil, { arg in
            guard let arg else { return nil }
            let driver = Unmanaged<TimerDriver>.fromOpaque(arg).takeRetainedValue()
            driver.loop()
            return nil
        }, box.toOpaque())
    }

    private func loop() {
        let me = ThreadID.current.rawValue
        let cpuStart = threadCPUNanoseconds(me)
        let buffer = UnsafeMutablePointer<sw_stack_t>.allocate(capacity: Int(capacity))
        defer { buffer.deallocate() }
        var nextSeq: UInt64 = 0
        var next = Workload.now()
        var stopping = false
        while !stopping {
            next += drainEvery
            var ts = timespec(tv_sec: next / 1_000_000_000, tv_nsec: next % 1_000_000_000)
            while running.load(ordering: .acquiring) &&
                    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
            stopping = !running.load(ordering: .acquiring)
            var count: UInt32 = 0
            _ = sw_ring_read(ring, &nextSeq, buffer, capacity, &count)
            for i in 0..<Int(count) {
                log.record(latency: 0, handler: Int(buffer[i].handler_ns), frames: Int(buffer[i].count))
            }
            drained.add(Int(count), ordering: .relaxed)
        }
        cpu.store(threadCPUNanoseconds(me) - cpuStart, ordering: .releasing)
    }

    func end() -> DriverCost {
        _ = sw_ring_stop(ring)
        running.store(false, ordering: .releasing)
        pthread_join(thread, nil)
        return DriverCost(samples: drained.load(ordering: .relaxed), failures: 0,
                          samplerCPUNanoseconds: cpu.load(ordering: .acquiring))
    }
}
