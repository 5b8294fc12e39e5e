/// The figures `bench sampler` measures that the project's overhead goals are judged on.
///
/// Every figure is a median over one run's alternating rounds; `nil` means the run did not
/// measure it (no peer installed, no watchdog stall), which fails its goal rather than passing it
/// by default: a goal that was not measured is not met.
package struct OverheadFigures: Sendable, Equatable, Codable {
    /// The timer ring's total cost (sampler CPU + time stolen from the thread, gap method), % of a core.
    package var timerTotalPercentOfCore: Double
    /// Time the timer ring steals per sample (gap method), µs.
    package var timerStolenMicroseconds: Double
    /// The same per-thread CPU-clock timer and signal with a handler that only records its time, µs.
    package var timerFloorStolenMicroseconds: Double?
    /// Time the request/answer path (sampler thread, frame-pointer walk) steals per sample, µs.
    package var threadStolenMicroseconds: Double?
    /// The bare request/answer round trip (PC only), µs stolen per sample.
    package var threadFloorStolenMicroseconds: Double?
    /// The request/answer latency p99 and the floor's median latency, µs.
    package var threadLatencyP99Microseconds: Double?
    package var floorLatencyMedianMicroseconds: Double?
    /// gperftools' CPU profiler in the same run, same method, µs stolen per sample.
    package var gperftoolsLibunwindStolenMicroseconds: Double?
    package var gperftoolsFramePointerStolenMicroseconds: Double?
    /// Allocations in the whole process while sampling (every sampling phase).
    package var samplingPathAllocations: Int
    /// Allocations on the watchdog thread during one stall (drains, scans, report building).
    package var watchdogPathAllocationsDuringStall: Int?
    /// The timer ring's handler time p50 on the frame-pointer path (frame records only), µs: the
    /// handler's wall time (CLOCK_MONOTONIC around the capture), from the run's unwind-path table.
    package var timerHandlerP50Microseconds: Double?
    /// The same ring's handler taking the PC only (its clock reads, the stack's bounds, the ring's
    /// slot), p50 µs in the same run: what this measure costs on the machine before any walk.
    package var timerHandlerFixedP50Microseconds: Double?
    /// The same frame records read bare (no unwind table, no module check: the bench's own handler
    /// on the same workload, every 4 ms), p50 µs in the same run: what the records themselves cost.
    package var timerHandlerBareWalkP50Microseconds: Double?
    /// System calls the timer ring's handler makes per sample (raw_syscalls tracepoint on the sampled
    /// thread, minus its unsampled phase, rt_sigreturn apart); `nil` where they cannot be counted.
    package var timerSystemCallsPerSample: Double?
    /// The perf driver (call chain + stack copy) stolen per sample ÷ the timer ring's, median of the
    /// rounds' ratios; `nil` where perf events are refused.
    package var perfStolenOverTimer: Double?
    /// A second `timer/empty` phase in every round (an A/A check): its stolen time per sample, µs.
    /// Its ratio to `timer/empty` is what two identical phases differ by in this run: the
    /// resolution of the `× own floor` ratios.
    package var timerFloorAgainStolenMicroseconds: Double?
    /// The same for the request/answer floor (a second `floor` phase), µs.
    package var threadFloorAgainStolenMicroseconds: Double?

    /// Collects the figures; see each property for its meaning and unit.
    package init(timerTotalPercentOfCore: Double, timerStolenMicroseconds: Double,
                timerFloorStolenMicroseconds: Double?, threadStolenMicroseconds: Double?,
                threadFloorStolenMicroseconds: Double?, threadLatencyP99Microseconds: Double?,
                floorLatencyMedianMicroseconds: Double?, gperftoolsLibunwindStolenMicroseconds: Double?,
                gperftoolsFramePointerStolenMicroseconds: Double?, samplingPathAllocations: Int,
                watchdogPathAllocationsDuringStall: Int?, timerHandlerP50Microseconds: Double? = nil,
                timerHandlerFixedP50Microseconds: Double? = nil, timerHandlerBareWalkP50Microseconds: Double? = nil,
                timerSystemCallsPerSample: Double? = nil, perfStolenOverTimer: Double? = nil,
                timerFloorAgainStolenMicroseconds: Double? = nil, threadFloorAgainStolenMicroseconds: Double? = nil) {
        self.timerTotalPercentOfCore = timerTotalPercentOfCore
        self.timerStolenMicroseconds = timerStolenMicroseconds
        self.timerFloorStolenMicroseconds = timerFloorStolenMicroseconds
        self.threadStolenMicroseconds = threadStolenMicroseconds
        self.threadFloorStolenMicroseconds = threadFloorStolenMicroseconds
        self.threadLatencyP99Microseconds = threadLatencyP99Microseconds
        self.floorLatencyMedianMicroseconds = floorLatencyMedianMicroseconds
        self.gperftoolsLibunwindStolenMicroseconds = gperftoolsLibunwindStolenMicroseconds
        self.gperftoolsFramePointerStolenMicroseconds = gperftoolsFramePointerStolenMicroseconds
        self.samplingPathAllocations = samplingPathAllocations
        self.watchdogPathAllocationsDuringStall = watchdogPathAllocationsDuringStall
        self.timerHandlerP50Microseconds = timerHandlerP50Microseconds
        self.timerHandlerFixedP50Microseconds = timerHandlerFixedP50Microseconds
        self.timerHandlerBareWalkP50Microseconds = timerHandlerBareWalkP50Microseconds
        self.timerSystemCallsPerSample = timerSystemCallsPerSample
        self.perfStolenOverTimer = perfStolenOverTimer
        self.timerFloorAgainStolenMicroseconds = timerFloorAgainStolenMicroseconds
        self.threadFloorAgainStolenMicroseconds = threadFloorAgainStolenMicroseconds
    }
}

/// The project's overhead goals (issues 11 and 19) and the verdict on each, from one run's figures.
/// Pure: the same figures always give the same verdicts.
package enum OverheadGoals {
    /// Goal: the default sampling (timer ring, 50 ms) costs at most this much of a core, all included.
    package static let totalCostPercentOfCore = 0.03
    /// Goal: the request/answer path steals at most this multiple of its own floor per sample.
    package static let stolenOverFloor = 1.2
    /// Goal (tightened from 1.2×): the timer ring steals at most this multiple of
    /// `timer/empty` (the same timer and signal, an empty handler) per sample.
    package static let timerStolenOverEmpty = 1.1
    /// Goal: the timer ring's handler takes at most this long (p50, frame-pointer path), µs.
    package static let handlerP50Microseconds = 0.5
    /// Tolerance of "≈ 0 system calls per sample": a difference of two counts, it can be slightly off 0.
    package static let systemCallsTolerance = 0.01
    /// Goal: the perf driver steals at most this multiple of the timer ring's time per sample.
    package static let perfOverTimer = 0.9
    /// Goal: the request/answer latency p99 is at most this multiple of the floor's median.
    package static let latencyP99OverFloorMedian = 3.0
    /// The claim being ported: matrix's "3 % CPU at 50 ms".
    package static let matrixClaimPercentOfCore = 3.0
    /// Mallocs on the watchdog thread over one stall: 50 per report, for its two
    /// reports (the first, at the threshold, and the final one). Idle rounds allocate nothing.
    package static let watchdogPathAllocationsPerStall = 100

    /// The goals' keys, in the order they are printed.
    package static let keys = ["totalCost", "handlerP50", "timerStolenVsOwnFloor", "threadStolenVsOwnFloor",
                              "belowGperftools", "belowGperftoolsGenericFP", "handlerSystemCalls", "perfVsTimer",
                              "latencyP99VsFloor", "samplingPathAllocations", "watchdogPathAllocationsDuringStall",
                              "matrixClaim"]

    /// One verdict per goal, keyed as in ``keys``.
    package static func evaluate(_ f: OverheadFigures) -> [String: GoalVerdict] {
        var out: [String: GoalVerdict] = [:]
        out["totalCost"] = GoalVerdict.atMost(f.timerTotalPercentOfCore, totalCostPercentOfCore,
                                  goal: "≤ \(totalCostPercentOfCore) % of a core",
                                  detail: "timer ring at 50 ms: sampler CPU + stolen time (gap method), % of a core")
        out["handlerP50"] = GoalVerdict.atMost(f.timerHandlerP50Microseconds, handlerP50Microseconds,
                                               goal: "≤ \(handlerP50Microseconds) µs",
                                               detail: "timer ring handler p50, frame records only (its wall time around the capture, unwind-path table)"
                                                   + (f.timerHandlerFixedP50Microseconds.map { "; PC only, same run: \(($0 * 1000).rounded() / 1000) µs" } ?? "")
                                                   + (f.timerHandlerBareWalkP50Microseconds.map { "; the same records read bare, same run: \(($0 * 1000).rounded() / 1000) µs" } ?? ""))
        out["timerStolenVsOwnFloor"] = GoalVerdict.atMost(GoalVerdict.ratio(f.timerStolenMicroseconds, f.timerFloorStolenMicroseconds), timerStolenOverEmpty,
                                              goal: "≤ \(timerStolenOverEmpty)× timer/empty",
                                              detail: "timer ring stolen per sample ÷ the same timer and signal with an empty handler (gap method)"
                                                  + aaText(f.timerFloorAgainStolenMicroseconds, f.timerFloorStolenMicroseconds, "timer/empty"))
        out["threadStolenVsOwnFloor"] = GoalVerdict.atMost(GoalVerdict.ratio(f.threadStolenMicroseconds, f.threadFloorStolenMicroseconds), stolenOverFloor,
                                               goal: "≤ \(stolenOverFloor)× floor",
                                               detail: "request/answer stolen per sample ÷ the PC-only request/answer floor (gap method)"
                                                   + aaText(f.threadFloorAgainStolenMicroseconds, f.threadFloorStolenMicroseconds, "floor"))
        let peers = [f.gperftoolsLibunwindStolenMicroseconds, f.gperftoolsFramePointerStolenMicroseconds]
        let peerRatio: Double? = peers.contains { $0 == nil } ? nil
            : peers.compactMap { GoalVerdict.ratio(f.timerStolenMicroseconds, $0) }.max()
        out["belowGperftools"] = GoalVerdict.below(peerRatio, 1,
                                       goal: "< 1× gperftools (both modes)",
                                       detail: "timer ring stolen per sample ÷ the lower of gperftools' libunwind and generic_fp modes, same run, gap method")
        out["belowGperftoolsGenericFP"] = GoalVerdict.below(GoalVerdict.ratio(f.timerStolenMicroseconds, f.gperftoolsFramePointerStolenMicroseconds), 1,
                                                            goal: "< 1× gperftools generic_fp",
                                                            detail: "timer ring stolen per sample ÷ gperftools with TCMALLOC_STACKTRACE_METHOD=generic_fp, same run, gap method")
        out["handlerSystemCalls"] = GoalVerdict.nearZero(f.timerSystemCallsPerSample, tolerance: systemCallsTolerance,
                                                         goal: "≈ 0 per sample (|x| < \(systemCallsTolerance))",
                                                         detail: "system calls of the timer ring's handler per sample (raw_syscalls tracepoint, minus the unsampled phase, rt_sigreturn apart)")
        out["perfVsTimer"] = GoalVerdict.atMost(f.perfStolenOverTimer, perfOverTimer,
                                                goal: "≤ \(perfOverTimer)× timer/fp",
                                                detail: "perf driver (call chain + stack copy) stolen per sample ÷ the timer ring's, median of the rounds' ratios; not measured where perf events are refused")
        out["latencyP99VsFloor"] = GoalVerdict.atMost(GoalVerdict.ratio(f.threadLatencyP99Microseconds, f.floorLatencyMedianMicroseconds),
                                          latencyP99OverFloorMedian,
                                          goal: "≤ \(latencyP99OverFloorMedian)× floor median",
                                          detail: "request/answer latency p99 ÷ the floor's median latency")
        out["samplingPathAllocations"] = GoalVerdict.atMost(Double(f.samplingPathAllocations), 0, goal: "0",
                                                detail: "mallocs in the whole process during every sampling phase")
        out["watchdogPathAllocationsDuringStall"] = GoalVerdict.atMost(
            f.watchdogPathAllocationsDuringStall.map(Double.init), Double(watchdogPathAllocationsPerStall),
            goal: "≤ \(watchdogPathAllocationsPerStall) (50 per report: the stall's first and final one)",
            detail: "mallocs on the watchdog thread during one sampled stall (drains, scans, report building)")
        out["matrixClaim"] = GoalVerdict.below(f.timerTotalPercentOfCore, matrixClaimPercentOfCore,
                                   goal: "< \(matrixClaimPercentOfCore) % of a core",
                                   detail: "matrix's claim, against the timer ring's total cost (gap method)")
        return out
    }

    /// `; A/A: floor again ÷ floor, same run: 1.04`, or nothing when the run had no second phase.
    static func aaText(_ again: Double?, _ floor: Double?, _ label: String) -> String {
        guard let ratio = GoalVerdict.ratio(again, floor) else { return "" }
        return "; A/A: \(label) again ÷ \(label), same run: \((ratio * 1000).rounded() / 1000) (what two identical phases differ by)"
    }
}
