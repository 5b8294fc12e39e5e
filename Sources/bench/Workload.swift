#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Stallwatch
import Synchronization

/// CPU-bound threads at a known stack depth that count their own progress and record the gaps in it.
///
/// Every iteration does a fixed amount of arithmetic and reads the monotonic clock. A gap between
/// two clock reads much longer than a normal iteration means the thread was interrupted (by our
/// signal, or by the VM and the kernel). Each thread writes its gaps (start, end) into its own
/// preallocated ring, so a sample whose handler started at `taken_at_ns` can be matched with the gap
/// that contains it: the gap minus a typical iteration is the time that sample stole.
final class Workload: Sendable {
    let depth: Int
    let workers: [Worker]
    private let stop = Atomic<Bool>(false)

    /// - Parameter workingSetBytes: when > 0, each thread also reads and writes random cache lines of a
    ///   buffer this large (rounded down to a power of two) every iteration, so the cache and TLB misses
    ///   a handler causes show up in the iteration it interrupted.
    init(depth: Int, threads: Int = 1, workingSetBytes: Int = 0) {
        self.depth = depth
        let capacity = max(2048, 32768 / max(threads, 1))
        workers = (0..<threads).map { _ in Worker(gapCapacity: capacity, workingSetBytes: workingSetBytes) }
    }

    /// Starts every worker and waits until each has calibrated its typical iteration.
    func start() {
        for worker in workers {
            let start = WorkerStart(workload: self, worker: worker)
            do throws(PlatformThread.StartFailure) {
                let thread = try PlatformThread.start {
                    start.worker.pthread.store(PlatformThread.currentHandle, ordering: .relaxed)
                    start.worker.tid.store(ThreadID.current.rawValue, ordering: .releasing)
                    start.workload.descend(start.workload.depth, start.worker)
                }
                thread.detach()
            } catch {
                preconditionFailure("pthread_create failed: \(error.code)")
            }
        }
        for worker in workers {
            while worker.typicalIterationNs.load(ordering: .acquiring) == 0 { usleep(1000) }
        }
    }

    func finish() { stop.store(true, ordering: .releasing) }

    var tids: [Int32] { workers.map { $0.tid.load(ordering: .acquiring) } }
    var iterations: Int { workers.reduce(0) { $0 + $1.iterations.load(ordering: .relaxed) } }
    var gapStolenNanoseconds: Int { workers.reduce(0) { $0 + $1.stolenNanoseconds.load(ordering: .relaxed) } }
    /// The median of the workers' typical iterations.
    var typicalIteration: Int {
        let t = workers.map { $0.typicalIterationNs.load(ordering: .acquiring) }.sorted()
        return t.isEmpty ? 0 : t[t.count / 2]
    }

    /// Recursion to the requested depth, one real frame per level.
    @inline(never)
    private func descend(_ n: Int, _ worker: Worker) {
        if n <= 1 {
            spin(worker)
        } else {
            descend(n - 1, worker)
        }
        blackHole(n)
    }

    @inline(never)
    private func spin(_ worker: Worker) {
        // Calibrate what one undisturbed iteration takes (the median of 20 000).
        var samples: [Int] = []
        samples.reserveCapacity(20_000)
        var last = Self.now()
        var x: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<20_000 {
            x = step(x, worker)
            let t = Self.now()
            samples.append(t - last)
            last = t
        }
        samples.sort()
        let typical = max(samples[samples.count / 2], 1)
        let threshold = typical + Self.gapThresholdExcess
        worker.threshold.store(threshold, ordering: .relaxed)
        worker.typicalIterationNs.store(typical, ordering: .releasing)
        var localIterations = 0
        var localStolen = 0
        last = Self.now()
        while !stop.load(ordering: .relaxed) {
            x = step(x, worker)
            let t = Self.now()
            let d = t - last
            if d > threshold {
                localStolen += d - typical
                worker.recordGap(start: last, end: t)
            }
            last = t
            localIterations += 1
            if localIterations & 0xff == 0 {
                worker.iterations.add(localIterations, ordering: .relaxed)
                worker.stolenNanoseconds.add(localStolen, ordering: .relaxed)
                localIterations = 0
                localStolen = 0
            }
        }
        blackHole(Int(truncatingIfNeeded: x))
    }

    /// One iteration: arithmetic, plus random cache lines of the working set when there is one.
    @inline(__always)
    private func step(_ seed: UInt64, _ worker: Worker) -> UInt64 {
        let x = work(seed)
        guard let set = worker.workingSet else { return x }
        var h = x
        var acc: UInt64 = 0
        for _ in 0..<Self.workingSetAccesses {
            h = h &* 0x9E37_79B9_7F4A_7C15 &+ 1
            let i = Int(truncatingIfNeeded: h >> 32) & worker.workingSetMask & ~7 // one word per cache line
            set[i] &+= 1
            acc ^= set[i]
        }
        return x ^ (acc & 1)
    }

    /// Cache lines of the working set touched per iteration.
    static let workingSetAccesses = 8

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

    /// A gap counts when it exceeds a typical iteration by more than this.
    static let gapThresholdExcess = 1_000

    static func now() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    }
}

private final class WorkerStart: Sendable {
    let workload: Workload
    let worker: Worker
    init(workload: Workload, worker: Worker) {
        self.workload = workload
        self.worker = worker
    }
}

/// One workload thread's counters and its ring of gaps.
final class Worker: @unchecked Sendable {
    // @unchecked: `gaps` is written only by the worker thread; readers validate with `gapHead`.
    let tid = Atomic<Int32>(0)
    /// The thread's pthread_t, as an integer.
    let pthread = Atomic<UInt64>(0)
    let iterations = Atomic<Int>(0)
    let stolenNanoseconds = Atomic<Int>(0)
    let typicalIterationNs = Atomic<Int>(0)
    let threshold = Atomic<Int>(0)
    let gapCapacity: Int
    private let gapHead = Atomic<Int>(0)
    private let gaps: UnsafeMutablePointer<Int> // (start, end) pairs, preallocated

    /// The thread's working set (words, a power of two; touched before use), or nil.
    let workingSet: UnsafeMutablePointer<UInt64>?
    let workingSetMask: Int

    init(gapCapacity: Int, workingSetBytes: Int = 0) {
        self.gapCapacity = gapCapacity
        gaps = .allocate(capacity: 2 * gapCapacity)
        gaps.initialize(repeating: 0, count: 2 * gapCapacity)
        var words = 1
        while words * 2 * 8 <= workingSetBytes { words *= 2 }
        if workingSetBytes >= 4096 {
            let set = UnsafeMutablePointer<UInt64>.allocate(capacity: words)
            set.initialize(repeating: 0, count: words)
            workingSet = set
            workingSetMask = words - 1
        } else {
            workingSet = nil
            workingSetMask = 0
        }
    }

    deinit {
        gaps.deallocate()
        workingSet?.deallocate()
    }

    @inline(__always)
    func recordGap(start: Int, end: Int) {
        let n = gapHead.load(ordering: .relaxed)
        let slot = (n % gapCapacity) * 2
        gaps[slot] = start
        gaps[slot + 1] = end
        gapHead.store(n + 1, ordering: .releasing)
    }

    /// The number of gaps recorded so far (a cursor for `gaps(since:)`).
    var gapCursor: Int { gapHead.load(ordering: .acquiring) }

    /// The gaps recorded since `cursor`, oldest first (those overwritten meanwhile are dropped), and
    /// how many were lost to wrapping.
    func gaps(since cursor: Int) -> (gaps: [Gap], lost: Int) {
        let head = gapHead.load(ordering: .acquiring)
        let from = max(cursor, head - gapCapacity)
        var out: [Gap] = []
        out.reserveCapacity(head - from)
        for n in from..<head {
            let slot = (n % gapCapacity) * 2
            out.append(Gap(start: gaps[slot], end: gaps[slot + 1]))
        }
        // Entries the writer overwrote while we copied are unreliable: drop them.
        let after = gapHead.load(ordering: .acquiring)
        let firstValid = after - gapCapacity
        let dropped = max(0, firstValid - from)
        if dropped > 0 { out.removeFirst(min(dropped, out.count)) }
        return (out, max(0, from - cursor) + dropped)
    }
}

/// An interval [start, end] (monotonic ns) in which a workload thread made no progress.
struct Gap {
    var start: Int
    var end: Int
}

@inline(never)
func blackHole(_ x: Int) {
    if x == 0x5EED_F00D { print("") }
}

/// CPU time of thread `tid` in nanoseconds (the library's ThreadCPUClock; 0 when the thread is gone).
func threadCPUNanoseconds(_ tid: Int32) -> Int {
    guard let cpu = try? ThreadCPUClock(ThreadID(rawValue: tid)).elapsed() else { return 0 }
    return Int(cpu.clampedNanoseconds)
}
