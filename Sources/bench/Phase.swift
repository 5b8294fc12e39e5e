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

/// What one phase samples with.
enum Mode: String, Codable, Hashable, CaseIterable {
    /// No sampling: the baseline of its round.
    case off
    /// Kernel timer on the thread's CPU clock, handler walks frame pointers into a ring.
    case timer
    /// The same timer and signal, a handler that records only its time: the timer ring's floor.
    case timerEmpty
    /// Sampler thread, request/answer, the chosen unwinder.
    case thread
    /// Sampler thread, request/answer, PC only: the bare signal round trip.
    case floor
    /// No signal: a perf task-clock event on the thread, the kernel's call chain plus registers and
    /// a stack copy for the table walk, its mmap ring drained like the timer ring's.
    case perf
    /// The same perf event with the kernel's call chain only (no stack copy): the perf driver's floor.
    case perfChain
}

/// One phase to run: a mode, its interval and its unwinder.
struct PhaseSpec: Hashable {
    var mode: Mode
    var intervalMilliseconds: Double
    var unwinder: String // "fp" or "libunwind"
    /// A second phase of the same mode in each round (an A/A check of the ratios' resolution).
    var again = false

    var label: String { again ? "\(modeLabel) again" : modeLabel }

    private var modeLabel: String {
        switch mode {
        case .off: "off"
        case .floor: "floor"
        case .timer: "timer/fp"
        case .timerEmpty: "timer/empty"
        case .thread: "thread/\(unwinder)"
        case .perf: "perf/chain+stack"
        case .perfChain: "perf/chain"
        }
    }
}

/// One phase's raw figures.
struct PhaseOutcome {
    var wallNanoseconds: Int
    var iterations: Int
    var gapStolenNanoseconds: Int
    var cost: DriverCost
    var processMallocs: Int
    var samples: [Sample]
    /// Per matched sample: the enclosing gap minus a typical iteration (gap method).
    var stolenPerSample: [Int]
    /// Per matched sample: gap end − handler start (handler, sigreturn, resume). A lower bound that
    /// leaves out whatever preceded the handler in the gap (delivery, but also preemption or a VM exit).
    var tailPerSample: [Int]
    /// Samples with no enclosing gap: they stole less than the gap threshold.
    var belowThreshold: Int
    var droppedSamples: Int
    /// Gaps (minus a typical iteration) that contain no sample: the VM's and kernel's own interruptions.
    var backgroundGaps: [Int]
    /// The workload threads' system calls over the phase, counted by the kernel (raw_syscalls
    /// tracepoint): all, and rt_sigreturn among them (a handler's return, not its own). `nil` when
    /// the tracepoint is not readable here.
    var systemCalls: (all: Int, sigreturn: Int)?
}

/// Runs phases against one workload and attributes samples to the workload's gaps.
struct PhaseRunner {
    let workload: Workload
    let logCapacity: Int
    let log: SampleLog

    init(workload: Workload, maxSamplesPerPhase: Int) {
        self.workload = workload
        logCapacity = maxSamplesPerPhase
        log = SampleLog(capacity: maxSamplesPerPhase)
    }

    func run(_ spec: PhaseSpec, seconds: Double) throws -> PhaseOutcome {
        let tids = workload.tids
        let intervalNs = Int(spec.intervalMilliseconds * 1_000_000)
        let driver: SamplingDriver? = switch spec.mode {
        case .off: nil
        case .timer: TimerDriver(targets: tids, intervalNanoseconds: intervalNs, drainEveryNanoseconds: 1_000_000_000, log: log)
        case .timerEmpty: TimerFloorDriver(targets: tids, intervalNanoseconds: intervalNs, log: log)
        case .thread: ThreadDriver(targets: tids, intervalNanoseconds: intervalNs,
                                   unwinder: spec.unwinder == "libunwind" ? SW_UNWIND_LIBUNWIND : SW_UNWIND_FRAME_POINTER,
                                   maxFrames: 128, log: log)
        case .floor: ThreadDriver(targets: tids, intervalNanoseconds: intervalNs, unwinder: SW_UNWIND_NONE,
                                  maxFrames: 1, log: log)
        case .perf: PerfDriver(targets: tids, intervalNanoseconds: intervalNs, drainEveryNanoseconds: 1_000_000_000,
                               stackBytes: SW_PERF_RING_DEFAULT_STACK_BYTES, log: log)
        case .perfChain: PerfDriver(targets: tids, intervalNanoseconds: intervalNs, drainEveryNanoseconds: 1_000_000_000,
                                    stackBytes: 0, log: log)
        }
        _ = log.take()
        let cursors = workload.workers.map(\.gapCursor)
        let counters = SystemCallCounters(tids)
        try driver?.begin()
        // The window opens once the driver is past its setup: what allocates in it is the sampling path.
        let m0 = bench_malloc_count_process()
        let i0 = workload.iterations
        let s0 = workload.gapStolenNanoseconds
        let t0 = Workload.now()
        usleep(UInt32(seconds * 1_000_000))
        let i1 = workload.iterations
        let s1 = workload.gapStolenNanoseconds
        let t1 = Workload.now()
        let m1 = bench_malloc_count_process()
        let cost = driver?.end() ?? DriverCost(samples: 0, failures: 0, samplerCPUNanoseconds: 0, samplerMallocs: 0)
        // After end(): the last signal in flight has returned; the ring's setup and stop ran elsewhere.
        let systemCalls = counters.finish()
        let (samples, dropped) = log.take()
        var byTid: [Int32: [Gap]] = [:]
        for (k, worker) in workload.workers.enumerated() {
            byTid[worker.tid.load(ordering: .relaxed)] = worker.gaps(since: cursors[k]).gaps
        }
        let typical = Dictionary(uniqueKeysWithValues: workload.workers.map {
            ($0.tid.load(ordering: .relaxed), $0.typicalIterationNs.load(ordering: .relaxed))
        })
        let (stolen, below) = attribute(samples, gaps: byTid, typical: typical)
        let tails = tailsOf(samples, gaps: byTid)
        var matched = Set<Int>()
        for sample in samples {
            if let g = byTid[sample.tid], let gap = enclosingGap(g, sample.takenAt) { matched.insert(gap.start) }
        }
        var background: [Int] = []
        for (tid, gaps) in byTid {
            let t = typical[tid] ?? 0
            for gap in gaps where gap.start >= t0 && gap.end <= t1 && !matched.contains(gap.start) {
                background.append(gap.end - gap.start - t)
            }
        }
        return PhaseOutcome(wallNanoseconds: t1 - t0, iterations: i1 - i0, gapStolenNanoseconds: s1 - s0,
                            cost: cost, processMallocs: Int(m1 - m0), samples: samples,
                            stolenPerSample: stolen, tailPerSample: tails, belowThreshold: below, droppedSamples: dropped,
                            backgroundGaps: background, systemCalls: systemCalls)
    }
}

/// The kernel's count of the workload threads' system calls over one phase (raw_syscalls
/// tracepoints through perf_event_open: what `perf stat -e raw_syscalls:sys_enter -t TID` counts).
final class SystemCallCounters {
    private var counters: [sw_syscall_counter_t] = []
    /// Why nothing is counted, when it is not.
    private(set) var unavailable: String?
    private var start: (all: Int, sigreturn: Int) = (0, 0)

    init(_ tids: [Int32]) {
        for tid in tids {
            var c = sw_syscall_counter_t()
            let rc = sw_syscall_counter_open(tid, &c)
            guard rc == 0 else {
                unavailable = "raw_syscalls tracepoint: \(String(cString: strerror(-rc)))"
                close()
                return
            }
            counters.append(c)
        }
        start = read()
    }

    private func read() -> (all: Int, sigreturn: Int) {
        var total = (all: 0, sigreturn: 0)
        for i in counters.indices {
            var all: UInt64 = 0, sigreturn: UInt64 = 0
            _ = sw_syscall_counter_read(&counters[i], &all, &sigreturn)
            total.all += Int(all)
            total.sigreturn += Int(sigreturn)
        }
        return total
    }

    private func close() {
        for i in counters.indices { sw_syscall_counter_close(&counters[i]) }
        counters = []
    }

    /// The counts since the start, and stops counting; `nil` when unavailable.
    func finish() -> (all: Int, sigreturn: Int)? {
        guard unavailable == nil else { return nil }
        let end = read()
        close()
        return (end.all - start.all, end.sigreturn - start.sigreturn)
    }

    /// Whether the tracepoint can be counted here (probed on the calling thread).
    static let reasonUnavailable: String? = {
        let probe = SystemCallCounters([ThreadID.current.rawValue])
        _ = probe.finish()
        return probe.unavailable
    }()
}

/// Matches each sample with the gap (sorted by start) that contains its handler's start time.
func attribute(_ samples: [Sample], gaps: [Int32: [Gap]], typical: [Int32: Int]) -> (stolen: [Int], below: Int) {
    var stolen: [Int] = []
    var below = 0
    for s in samples {
        guard let g = gaps[s.tid], let t = typical[s.tid], let gap = enclosingGap(g, s.takenAt) else {
            below += 1
            continue
        }
        stolen.append(gap.end - gap.start - t)
    }
    return (stolen, below)
}

/// The gap with start <= t <= end in `gaps` (sorted by start, non-overlapping), by binary search.
func enclosingGap(_ gaps: [Gap], _ t: Int) -> Gap? {
    var lo = 0, hi = gaps.count
    while lo < hi {
        let mid = (lo + hi) / 2
        if gaps[mid].start <= t { lo = mid + 1 } else { hi = mid }
    }
    guard lo > 0 else { return nil }
    let g = gaps[lo - 1]
    return t <= g.end ? g : nil
}

/// For each sample inside a gap: gap end − handler start.
func tailsOf(_ samples: [Sample], gaps: [Int32: [Gap]]) -> [Int] {
    samples.compactMap { s in
        guard let g = gaps[s.tid], let gap = enclosingGap(g, s.takenAt) else { return nil }
        return gap.end - s.takenAt
    }
}
