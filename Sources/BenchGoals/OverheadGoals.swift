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

    /// Collects the figures; see each property for its meaning and unit.
    package init(timerTotalPercentOfCore: Double, timerStolenMicroseconds: Double,
                timerFloorStolenMicroseconds: Double?, threadStolenMicroseconds: Double?,
                threadFloorStolenMicroseconds: Double?, threadLatencyP99Microseconds: Double?,
                floorLatencyMedianMicroseconds: Double?, gperftoolsLibunwindStolenMicroseconds: Double?,
                gperftoolsFramePointerStolenMicroseconds: Double?, samplingPathAllocations: Int,
                watchdogPathAllocationsDuringStall: Int?) {
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
    }
}

/// One goal's verdict: the figure, the goal it was held to, and whether it met it.
package struct GoalVerdict: Sendable, Equatable, Codable {
    /// Whether the figure meets the goal. A figure that was not measured does not.
    package var pass: Bool
    /// The measured figure in the goal's unit; `nil` when it was not measured.
    package var value: Double?
    /// The goal, e.g. `"≤ 0.03 % of a core"`.
    package var goal: String
    /// What the figure is and how it was measured.
    package var detail: String

    /// A verdict as measured; see the properties.
    package init(pass: Bool, value: Double?, goal: String, detail: String) {
        self.pass = pass
        self.value = value
        self.goal = goal
        self.detail = detail
    }

    /// `PASS`/`MISS`, as printed.
    package var word: String { pass ? "PASS" : "MISS" }
}

/// The project's overhead goals (issue 11) and the verdict on each, from one run's figures.
/// Pure: the same figures always give the same verdicts.
package enum OverheadGoals {
    /// Goal: the default sampling (timer ring, 50 ms) costs at most this much of a core, all included.
    package static let totalCostPercentOfCore = 0.03
    /// Goal: a driver steals at most this multiple of its own floor per sample.
    package static let stolenOverFloor = 1.2
    /// Goal: the request/answer latency p99 is at most this multiple of the floor's median.
    package static let latencyP99OverFloorMedian = 3.0
    /// The claim being ported: matrix's "3 % CPU at 50 ms".
    package static let matrixClaimPercentOfCore = 3.0

    /// The goals' keys, in the order they are printed.
    package static let keys = ["totalCost", "timerStolenVsOwnFloor", "threadStolenVsOwnFloor", "belowGperftools",
                              "latencyP99VsFloor", "samplingPathAllocations", "watchdogPathAllocationsDuringStall",
                              "matrixClaim"]

    /// One verdict per goal, keyed as in ``keys``.
    package static func evaluate(_ f: OverheadFigures) -> [String: GoalVerdict] {
        var out: [String: GoalVerdict] = [:]
        out["totalCost"] = atMost(f.timerTotalPercentOfCore, totalCostPercentOfCore,
                                  goal: "≤ \(totalCostPercentOfCore) % of a core",
                                  detail: "timer ring at 50 ms: sampler CPU + stolen time (gap method), % of a core")
        out["timerStolenVsOwnFloor"] = atMost(ratio(f.timerStolenMicroseconds, f.timerFloorStolenMicroseconds), stolenOverFloor,
                                              goal: "≤ \(stolenOverFloor)× timer/empty",
                                              detail: "timer ring stolen per sample ÷ the same timer and signal with an empty handler (gap method)")
        out["threadStolenVsOwnFloor"] = atMost(ratio(f.threadStolenMicroseconds, f.threadFloorStolenMicroseconds), stolenOverFloor,
                                               goal: "≤ \(stolenOverFloor)× floor",
                                               detail: "request/answer stolen per sample ÷ the PC-only request/answer floor (gap method)")
        let peers = [f.gperftoolsLibunwindStolenMicroseconds, f.gperftoolsFramePointerStolenMicroseconds]
        let peerRatio: Double? = peers.contains { $0 == nil } ? nil
            : peers.compactMap { ratio(f.timerStolenMicroseconds, $0) }.max()
        out["belowGperftools"] = below(peerRatio, 1,
                                       goal: "< 1× gperftools (both modes)",
                                       detail: "timer ring stolen per sample ÷ the lower of gperftools' libunwind and generic_fp modes, same run, gap method")
        out["latencyP99VsFloor"] = atMost(ratio(f.threadLatencyP99Microseconds, f.floorLatencyMedianMicroseconds),
                                          latencyP99OverFloorMedian,
                                          goal: "≤ \(latencyP99OverFloorMedian)× floor median",
                                          detail: "request/answer latency p99 ÷ the floor's median latency")
        out["samplingPathAllocations"] = atMost(Double(f.samplingPathAllocations), 0, goal: "0",
                                                detail: "mallocs in the whole process during every sampling phase")
        out["watchdogPathAllocationsDuringStall"] = atMost(f.watchdogPathAllocationsDuringStall.map(Double.init), 0, goal: "0",
                                                           detail: "mallocs on the watchdog thread during one sampled stall (drains, scans, report building)")
        out["matrixClaim"] = below(f.timerTotalPercentOfCore, matrixClaimPercentOfCore,
                                   goal: "< \(matrixClaimPercentOfCore) % of a core",
                                   detail: "matrix's claim, against the timer ring's total cost (gap method)")
        return out
    }

    private static func ratio(_ a: Double?, _ b: Double?) -> Double? {
        guard let a, let b, a.isFinite, b.isFinite, b > 0 else { return nil }
        return a / b
    }

    private static func atMost(_ value: Double?, _ limit: Double, goal: String, detail: String) -> GoalVerdict {
        let v = value.flatMap { $0.isFinite ? $0 : nil }
        return GoalVerdict(pass: v.map { $0 <= limit } ?? false, value: v, goal: goal, detail: detail)
    }

    private static func below(_ value: Double?, _ limit: Double, goal: String, detail: String) -> GoalVerdict {
        let v = value.flatMap { $0.isFinite ? $0 : nil }
        return GoalVerdict(pass: v.map { $0 < limit } ?? false, value: v, goal: goal, detail: detail)
    }
}
