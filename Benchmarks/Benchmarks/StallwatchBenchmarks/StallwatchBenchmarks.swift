import Benchmark
import CSampler
import Glibc
import Stallwatch
import Synchronization

/// A thread that spins until told to stop, so captures always meet a running target.
final class Spinner: Sendable {
    let tid = Atomic<Int32>(0)
    private let stop = Atomic<Bool>(false)

    init() {
        let box = Unmanaged.passRetained(self)
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { arg in
            guard let arg else { return nil }
            let spinner = Unmanaged<Spinner>.fromOpaque(arg).takeRetainedValue()
            spinner.tid.store(ThreadID.current.rawValue, ordering: .releasing)
            var x: UInt64 = 1
            while !spinner.stop.load(ordering: .relaxed) { x = x &* 6364136223846793005 &+ 1 }
            if x == 42 { print("") }
            return nil
        }, box.toOpaque())
        precondition(rc == 0, "pthread_create failed: \(rc)")
        pthread_detach(thread)
        while tid.load(ordering: .acquiring) == 0 { usleep(100) }
    }

    func finish() { stop.store(true, ordering: .releasing) }
}

let benchmarks: @Sendable () -> Void = {
    // 10 ms CPU-time resolution and no hardware counters on this VM: wall clock and mallocs.
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal],
        maxDuration: .seconds(2),
        maxIterations: 100_000
    )

    func capture(_ name: String, _ unwinder: sw_unwinder_t, _ maxFrames: UInt32) {
        Benchmark(name) { benchmark in
            guard (try? StackSampler()) != nil else { fatalError("cannot install the sampler") }
            let spinner = Spinner()
            defer { spinner.finish() }
            let target = spinner.tid.load(ordering: .acquiring)
            let out = UnsafeMutablePointer<sw_stack_t>.allocate(capacity: 1)
            defer { out.deallocate() }
            _ = sw_capture(target, unwinder, maxFrames, 100_000_000, out) // warm: first capture reads the map
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                blackHole(sw_capture(target, unwinder, maxFrames, 100_000_000, out))
            }
            benchmark.stopMeasurement()
        }
    }
    capture("capture fp (128 frames)", SW_UNWIND_FRAME_POINTER, 128)
    capture("capture libunwind (128 frames)", SW_UNWIND_LIBUNWIND, 128)
    capture("capture floor (PC only)", SW_UNWIND_NONE, 1)

    Benchmark("thread CPU clock read (running thread)") { benchmark in
        let spinner = Spinner()
        defer { spinner.finish() }
        let clock = ThreadCPUClock(ThreadID(rawValue: spinner.tid.load(ordering: .acquiring)))
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try? clock.elapsed())
        }
        benchmark.stopMeasurement()
    }

    Benchmark("ring drain (20 samples × 128 frames max, fp)") { benchmark in
        guard (try? StackSampler()) != nil else { fatalError("cannot install the sampler") }
        let spinner = Spinner()
        defer { spinner.finish() }
        let ring = sw_ring_start(spinner.tid.load(ordering: .acquiring), 4_000_000, SW_RING_CLOCK_THREAD_CPU, 128, 20)
        guard ring >= 0 else { fatalError("sw_ring_start failed: \(ring)") }
        usleep(150_000) // fill the ring: 20 × 4 ms of the spinner's CPU
        _ = sw_ring_stop(ring)
        let out = UnsafeMutablePointer<sw_stack_t>.allocate(capacity: 20)
        defer { out.deallocate() }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            // A stopped ring keeps its entries: reading from sequence 0 copies all 20 every time.
            var next: UInt64 = 0
            var count: UInt32 = 0
            blackHole(sw_ring_read(ring, &next, out, 20, &count))
        }
        benchmark.stopMeasurement()
    }
}
