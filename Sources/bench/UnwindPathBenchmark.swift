import BenchSupport
import CSampler
import Foundation
import Stallwatch
import Synchronization

/// The signal handler's time by the path its walk takes, in one run: frame records all the way,
/// and the same depth with two frames in the middle that only unwind tables describe (glibc's
/// qsort_r and msort_with_tmp, built without frame pointers), and the handler's fixed part alone
/// (the same ring taking the PC only: its clock reads, the stack's bounds, the ring's slot), the
/// floor this measure has on the machine — and, for the walk, its own floor: the same frame
/// records read bare by the bench's timer/empty handler (no unwind table, no module check, no
/// bound from a table), cold in the same way. Runs alternate path by path; the two async paths are
/// one run of one thread whose chain following is switched on and off every 10 ms, each sample
/// counted by what its walk did: A and B under the same CPU, caches and neighbours.
struct UnwindPathFigures: Codable {
    var path: String
    var samples: Int
    var handlerP50Microseconds: Double
    var handlerP99Microseconds: Double
    var framesMedian: Double
    var tableFramesMedian: Double
    /// Share of samples walked to the thread's first frame.
    var wholeShare: Double
    /// Share of samples holding the caller above the frameless frames (the bench's own `descend`).
    var callerReachedShare: Double
}

enum UnwindPath: String, CaseIterable {
    case framePointers = "frame records only"
    case unwindTable = "2 table frames in the middle"
    case pcOnly = "PC only (the handler's fixed part)"
    case bareRecords = "bare record walk (reading the records only)"
    case asyncChain = "frame records + 5-deep async chain"
    case asyncChainOff = "the same stack, async chain not followed"

    /// Async functions above the spinner on the async paths: each suspended once, so they are
    /// its callers only in the task's context chain.
    static let asyncDepth = 5

    var isAsync: Bool { self == .asyncChain || self == .asyncChainOff }

    /// Frames the ring keeps: one for the fixed part (the walk stops at the interrupted PC), the
    /// sampler's default otherwise.
    var maxFrames: Int? { self == .pcOnly ? 1 : nil }

    /// Frames the bare walk may read: more than the workload's stack holds.
    static let bareMaxFrames: UInt32 = 128
}

/// One sample of one path: what the table pools.
private struct PathSample {
    var handlerMicroseconds: Double
    var frames: Int
    var tableFrames: Int
    var isWhole: Bool
    /// Whether the caller above the frameless frames was reached (never, for the bare walk: it keeps no names).
    var callerReached: Bool
    /// Whether the walk followed an async chain (the async paths' samples are sorted by it).
    var followedChain: Bool
}

func measureUnwindPaths(depth: Int, rounds: Int, seconds: Double) throws -> [UnwindPathFigures] {
    let sampler = try StackSampler()
    let learnt = SpinnerState()
    Task.detached { if await AsyncChainLayout.learn() == .learnt { learnt.done.store(true, ordering: .releasing) }; learnt.tid.store(1, ordering: .releasing) }
    while learnt.tid.load(ordering: .acquiring) == 0 { usleep(1000) }
    let paths = UnwindPath.allCases.filter { !$0.isAsync || learnt.done.load(ordering: .acquiring) }
    if paths.count < UnwindPath.allCases.count { print("async chain paths skipped: \(AsyncChainLayout.state)") }
    var handler: [UnwindPath: [Double]] = [:]
    var frames: [UnwindPath: [Double]] = [:]
    var tables: [UnwindPath: [Double]] = [:]
    var whole: [UnwindPath: Int] = [:]
    var reached: [UnwindPath: Int] = [:]
    let symbolizer = Symbolizer()
    for round in 0..<rounds {
        let order = round % 2 == 0 ? paths : paths.reversed()
        for path in order where path != .asyncChainOff {
            let samples = try sampleSpinner(path: path, depth: depth, seconds: seconds, sampler: sampler, symbolizer: symbolizer)
            if round == 0 { continue } // the first round pays first touches: discarded
            for s in samples {
                let path = path.isAsync ? (s.followedChain ? .asyncChain : .asyncChainOff) : path
                handler[path, default: []].append(s.handlerMicroseconds)
                frames[path, default: []].append(Double(s.frames))
                tables[path, default: []].append(Double(s.tableFrames))
                if s.isWhole { whole[path, default: 0] += 1 }
                if s.callerReached { reached[path, default: 0] += 1 }
            }
        }
    }
    return UnwindPath.allCases.map { path in
        let h = handler[path] ?? []
        return UnwindPathFigures(path: path.rawValue, samples: h.count,
                                 handlerP50Microseconds: Stats.median(h), handlerP99Microseconds: Stats.percentile(h, 99),
                                 framesMedian: Stats.median(frames[path] ?? []),
                                 tableFramesMedian: Stats.median(tables[path] ?? []),
                                 wholeShare: h.isEmpty ? 0 : Double(whole[path] ?? 0) / Double(h.count),
                                 callerReachedShare: h.isEmpty ? 0 : Double(reached[path] ?? 0) / Double(h.count))
    }
}

/// One spinning thread on `path`, sampled on its CPU clock every 4 ms for `seconds`: by a timer
/// ring, or for the bare walk by the bench's timer/empty handler (installed before the sampler).
private func sampleSpinner(path: UnwindPath, depth: Int, seconds: Double, sampler: StackSampler,
                           symbolizer: Symbolizer) throws -> [PathSample] {
    // The C spinner polls `stop` as a volatile int; both words outlive the thread (joined below).
    let stop = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    let progress = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)
    defer { stop.deallocate(); progress.deallocate() }
    stop.initialize(to: 0)
    progress.initialize(to: 0)
    let state = SpinnerState()
    let words = (stop: UInt(bitPattern: stop), progress: UInt(bitPattern: progress))
    let spin: @Sendable () -> Void = {
        state.tid.store(ThreadID.current.rawValue, ordering: .releasing)
        if let s = UnsafePointer<Int32>(bitPattern: words.stop), let p = UnsafeMutablePointer<UInt64>(bitPattern: words.progress) {
            switch path {
            case .framePointers, .pcOnly, .bareRecords, .asyncChain, .asyncChainOff: bench_spin_fp(Int32(depth), s, p)
            case .unwindTable: bench_spin_in_qsort(Int32(depth), s, p)
            }
        }
        state.done.store(true, ordering: .releasing)
    }
    if path.isAsync {
        // On a pool thread, under asyncDepth async functions that each suspended once.
        Task.detached { await benchAsyncLevel(UnwindPath.asyncDepth, spin) }
    } else {
        Thread(block: spin).start()
    }
    defer { sw_async_walks_enable(1) }
    while state.tid.load(ordering: .acquiring) == 0 { usleep(1000) }
    defer {
        stop.pointee = 1
        while !state.done.load(ordering: .acquiring) { usleep(1000) }
    }
    let tid = state.tid.load(ordering: .acquiring)
    if path == .bareRecords { return try bareWalks(tid: tid, seconds: seconds) }
    let ring = try SamplingRing(sampler: sampler, thread: ThreadID(rawValue: tid),
                                interval: .milliseconds(4), capacity: 1024, maxFrames: path.maxFrames)
    if path.isAsync {
        for period in 0..<max(2, Int(seconds * 100)) {
            sw_async_walks_enable(Int32(period % 2))
            usleep(10_000)
        }
    } else {
        usleep(UInt32(seconds * 1_000_000))
    }
    let stacks = ring.drain()
    ring.stop()
    return stacks.map { s in
        // The caller of the frameless code: a frame of `descend` above qsort's frames.
        let names = symbolizer.symbolize(s).map { $0.symbol ?? "" }
        let reached: Bool
        if path.isAsync {
            // Every async caller, outermost included.
            reached = names.filter { $0.contains("benchAsyncLevel") }.count == UnwindPath.asyncDepth
        } else if let q = names.firstIndex(where: { $0.hasPrefix("qsort") || $0.hasPrefix("msort") }) {
            reached = names[q...].contains { $0.contains("descend") }
        } else {
            reached = names.contains { $0.contains("descend") }
        }
        return PathSample(handlerMicroseconds: Double(s.handlerTime.clampedNanosecondsForBench) / 1000,
                          frames: s.frames.count, tableFrames: s.tableFrames, isWhole: s.isWhole, callerReached: reached,
                          followedChain: s.asyncFrames != nil)
    }
}

/// The bare walk's ticks on thread `tid` for `seconds`: the timer/empty handler with its walk on.
private func bareWalks(tid: Int32, seconds: Double) throws -> [PathSample] {
    let capacity = Int(TimerFloorDriver.capacity)
    let cursor = bench_timer_floor_head() // ticks of earlier phases are not this path's
    bench_timer_floor_set_walk(UnwindPath.bareMaxFrames)
    let timer = bench_timer_floor_start(SIGPROF, tid, 4_000_000)
    guard timer >= 0 else {
        bench_timer_floor_set_walk(0)
        throw BenchError("bench_timer_floor_start(\(tid)) for the bare walk failed: \(timer)")
    }
    usleep(UInt32(seconds * 1_000_000))
    bench_timer_floor_stop(timer)
    bench_timer_floor_set_walk(0)
    var tids = [Int32](repeating: 0, count: capacity)
    var count: UInt64 = 0
    var walkNs = [UInt64](repeating: 0, count: capacity)
    var frames = [UInt32](repeating: 0, count: capacity)
    _ = bench_timer_floor_read_walks(cursor, &tids, &walkNs, &frames, UInt64(capacity), &count)
    return (0..<Int(count)).filter { tids[$0] == tid }.map {
        PathSample(handlerMicroseconds: Double(walkNs[$0]) / 1000, frames: Int(frames[$0]), tableFrames: 0,
                   isWhole: false, callerReached: false, followedChain: false)
    }
}

/// `depth` async functions, each suspending once before it calls the next, then `body`.
@inline(never)
private func benchAsyncLevel(_ depth: Int, _ body: @Sendable () -> Void) async {
    await Task.yield()
    if depth <= 1 { return body() }
    await benchAsyncLevel(depth - 1, body)
    blackHole(depth)
}

private final class SpinnerState: Sendable {
    let tid = Atomic<Int32>(0)
    let done = Atomic<Bool>(false)
}

extension Duration {
    var clampedNanosecondsForBench: Int64 {
        let (s, a) = components
        return s * 1_000_000_000 + a / 1_000_000_000
    }
}
