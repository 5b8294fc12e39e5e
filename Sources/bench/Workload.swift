import Glibc
import Stallwatch
import Synchronization

/// A CPU-bound thread at a known stack depth that counts its own progress and the gaps in it.
///
/// Every iteration does a fixed amount of arithmetic and reads the monotonic clock. A gap between
/// two clock reads much longer than a normal iteration means the thread was interrupted (by our
/// signal, or by the VM and the kernel): the excess over a normal iteration is time stolen from it.
/// Comparing stolen time with sampling on and off gives the cost per sample without relying on a
/// throughput difference, which this noisy VM cannot resolve below about 0.2 %.
final class Workload: Sendable {
    let depth: Int
    let iterations = Atomic<Int>(0)
    let stolenNanoseconds = Atomic<Int>(0)
    let gaps = Atomic<Int>(0)
    let tid = Atomic<Int32>(0)
    private let stop = Atomic<Bool>(false)
    private let typicalIterationNs = Atomic<Int>(0)

    init(depth: Int) { self.depth = depth }

    func start() {
        var attr = pthread_attr_t()
        pthread_attr_init(&attr)
        let box = Unmanaged.passRetained(self)
        var thread = pthread_t()
        let rc = pthread_create(&thread, &attr, { arg in
            guard let arg else { return nil }
            let workload = Unmanaged<Workload>.fromOpaque(arg).takeRetainedValue()
            workload.tid.store(ThreadID.current.rawValue, ordering: .releasing)
            workload.descend(workload.depth)
            return nil
        }, box.toOpaque())
        precondition(rc == 0, "pthread_create failed: \(rc)")
        pthread_detach(thread)
        while tid.load(ordering: .acquiring) == 0 { usleep(100) }
    }

    func finish() { stop.store(true, ordering: .releasing) }

    /// Recursion to the requested depth, one real frame per level.
    @inline(never)
    private func descend(_ n: Int) {
        if n <= 1 {
            spin()
        } else {
            descend(n - 1)
        }
        blackHole(n)
    }

    @inline(never)
    private func spin() {
        // Calibrate what one undisturbed iteration takes.
        var samples: [Int] = []
        samples.reserveCapacity(20_000)
        var last = Self.now()
        var x: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<20_000 {
            x = work(x)
            let t = Self.now()
            samples.append(t - last)
            last = t
        }
        samples.sort()
        let typical = max(samples[samples.count / 2], 1)
        typicalIterationNs.store(typical, ordering: .releasing)
        // A gap counts when it exceeds a normal iteration by more than a microsecond.
        let threshold = typical + 1_000
        var localIterations = 0
        var localStolen = 0
        var localGaps = 0
        last = Self.now()
        while !stop.load(ordering: .relaxed) {
            x = work(x)
            let t = Self.now()
            let d = t - last
            last = t
            localIterations += 1
            if d > threshold {
                localStolen += d - typical
                localGaps += 1
            }
            if localIterations & 0xff == 0 {
                iterations.add(localIterations, ordering: .relaxed)
                stolenNanoseconds.add(localStolen, ordering: .relaxed)
                gaps.add(localGaps, ordering: .relaxed)
                localIterations = 0
                localStolen = 0
                localGaps = 0
            }
        }
        blackHole(Int(truncatingIfNeeded: x))
    }

    @inline(__always)
    private func work(_ seed: UInt64) -> UInt64 {
        var x = seed
        for _ in 0..<48 {
            x ^= x << 13
            x ^= x >> 7
            x ^= x << 17
        }
        return x
    }

    var typicalIteration: Int { typicalIterationNs.load(ordering: .acquiring) }

    static func now() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    }
}

@inline(never)
func blackHole(_ x: Int) {
    if x == 0x5EED_F00D { print("") }
}

/// CPU time of thread `tid` in nanoseconds, from the kernel's per-thread CPU clock.
func threadCPUNanoseconds(_ tid: Int32) -> Int {
    var ts = timespec()
    let clock = clockid_t((~Int32(tid)) << 3 | 6)
    guard clock_gettime(clock, &ts) == 0 else { return 0 }
    return ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}
