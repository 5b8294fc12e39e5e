/// Order statistics for benchmark figures.
enum Stats {
    static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let rank = min(max(p / 100 * Double(sorted.count - 1), 0), Double(sorted.count - 1))
        let lo = Int(rank.rounded(.down)), hi = Int(rank.rounded(.up))
        return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - Double(lo))
    }
    static func median(_ values: [Double]) -> Double { percentile(values, 50) }
}

/// A median with its spread over rounds.
struct Spread: Codable {
    var median: Double
    var min: Double
    var max: Double

    init(_ values: [Double]) {
        let v = values.filter { !$0.isNaN }
        median = Stats.median(v)
        min = v.min() ?? .nan
        max = v.max() ?? .nan
    }

    var width: Double { max - min }
}

/// Formatting helpers for tables.
enum Fmt {
    static func f(_ x: Double, _ digits: Int = 3) -> String { x.isNaN ? "-" : String(format: "%.\(digits)f", x) }
    static func s(_ sp: Spread, _ digits: Int = 3) -> String { "\(f(sp.median, digits)) [\(f(sp.min, digits))…\(f(sp.max, digits))]" }
    static func pad(_ s: String, _ n: Int) -> String { s.count >= n ? s + " " : s.padding(toLength: n, withPad: " ", startingAt: 0) }
}

/// One row of a cost table: a sampling method measured over alternating rounds.
struct CostRow: Codable {
    var label: String
    var samplesPerSecond: Spread
    var throughputLossPercent: Spread
    /// Old method: (gap time on − gap time off, per wall second) × wall / samples, per round.
    var stolenPerSampleExcessMicroseconds: Spread
    /// New method: per sample, the workload gap containing the handler's start, minus a typical iteration.
    var stolenPerSampleGapMedianMicroseconds: Double
    var stolenPerSampleGapP99Microseconds: Double
    /// Per matched sample: gap end − handler start (a lower bound, free of what preceded the handler).
    var stolenTailMedianMicroseconds: Double
    var stolenTailP99Microseconds: Double
    var samplesMatchedToGap: Int
    var samplesBelowThreshold: Int
    var samplerCPUPercentOfCore: Spread
    /// Sampler CPU + per-sample stolen time (gap method), % of one core, per round.
    var totalCostPercentOfCore: Spread
    /// Sampler CPU + samples/s × the median stolen per sample (gap method), % of one core, per round:
    /// the same cost without the rare sample whose gap also holds a preemption by other work.
    var totalCostFromMedianPercentOfCore: Spread = Spread([])
    var latencyMedianMicroseconds: Double
    var latencyP99Microseconds: Double
    var handlerMedianMicroseconds: Double
    var framesMedian: Double
    var failures: Int
    var processMallocsDuringSampling: Int
    var samplerThreadMallocs: Int
    var note: String?
    /// System calls the sampled thread made per sample beyond its unsampled off phase (rt_sigreturn
    /// left out), counted by the kernel; `nil` when not counted (tracepoint unavailable, peers).
    var systemCallsPerSample: Double?
    /// rt_sigreturn per sample: one per handler run, 0 where no signal is delivered.
    var sigreturnsPerSample: Double?

    /// Builds a row from per-round (phase, off phase) pairs.
    init(label: String, rounds: [(on: PhaseOutcome, off: PhaseOutcome)]) {
        self.label = label
        samplesPerSecond = Spread(rounds.map { Double($0.on.cost.samples) / Double($0.on.wallNanoseconds) * 1e9 })
        throughputLossPercent = Spread(rounds.map { lossPercent(on: ($0.on.iterations, $0.on.wallNanoseconds),
                                                                off: ($0.off.iterations, $0.off.wallNanoseconds)) })
        stolenPerSampleExcessMicroseconds = Spread(rounds.map {
            excessPerSample(on: ($0.on.gapStolenNanoseconds, $0.on.wallNanoseconds),
                            off: ($0.off.gapStolenNanoseconds, $0.off.wallNanoseconds), samples: $0.on.cost.samples) / 1000
        })
        let gap = GapFigures(stolen: rounds.flatMap(\.on.stolenPerSample), tails: rounds.flatMap(\.on.tailPerSample))
        (stolenPerSampleGapMedianMicroseconds, stolenPerSampleGapP99Microseconds, samplesMatchedToGap) = (gap.median, gap.p99, gap.count)
        (stolenTailMedianMicroseconds, stolenTailP99Microseconds) = (gap.tailMedian, gap.tailP99)
        samplesBelowThreshold = rounds.map(\.on.belowThreshold).reduce(0, +)
        samplerCPUPercentOfCore = Spread(rounds.map { Double($0.on.cost.samplerCPUNanoseconds) / Double($0.on.wallNanoseconds) * 100 })
        totalCostPercentOfCore = Spread(rounds.map {
            Double($0.on.cost.samplerCPUNanoseconds + $0.on.stolenPerSample.reduce(0, +)) / Double($0.on.wallNanoseconds) * 100
        })
        totalCostFromMedianPercentOfCore = Spread(rounds.map {
            let median = Stats.median($0.on.stolenPerSample.map(Double.init))
            let perSecond = Double($0.on.cost.samples) / Double($0.on.wallNanoseconds) * 1e9
            return (Double($0.on.cost.samplerCPUNanoseconds) / Double($0.on.wallNanoseconds) * 1e9 + perSecond * median) / 1e9 * 100
        })
        let samples = rounds.flatMap(\.on.samples)
        let latencies = samples.filter { $0.latency > 0 }.map { Double($0.latency) / 1000 }
        latencyMedianMicroseconds = Stats.median(latencies)
        latencyP99Microseconds = Stats.percentile(latencies, 99)
        handlerMedianMicroseconds = Stats.median(samples.map { Double($0.handler) / 1000 })
        framesMedian = Stats.median(samples.map { Double($0.frames) })
        failures = rounds.map(\.on.cost.failures).reduce(0, +)
        processMallocsDuringSampling = rounds.map(\.on.processMallocs).reduce(0, +)
        samplerThreadMallocs = rounds.map(\.on.cost.samplerMallocs).reduce(0, +)
        let counted = rounds.compactMap { r -> (own: Double, sigreturn: Int, samples: Int)? in
            guard let on = r.on.systemCalls, let off = r.off.systemCalls else { return nil }
            let scale = Double(r.on.wallNanoseconds) / Double(max(r.off.wallNanoseconds, 1))
            return (Double(on.all - on.sigreturn) - Double(off.all - off.sigreturn) * scale, on.sigreturn, r.on.cost.samples)
        }
        let countedSamples = counted.map(\.samples).reduce(0, +)
        if !rounds.isEmpty && counted.count == rounds.count && countedSamples > 0 {
            systemCallsPerSample = counted.map(\.own).reduce(0, +) / Double(countedSamples)
            sigreturnsPerSample = Double(counted.map(\.sigreturn).reduce(0, +)) / Double(countedSamples)
        }
    }

    /// Builds a row for a peer measured in child processes (no sampler thread, no latency).
    init(peer label: String, rounds: [(on: WorkloadReport, off: WorkloadReport)]) {
        self.label = label
        samplesPerSecond = Spread(rounds.map { Double($0.on.profilerSignals) / Double($0.on.wallNanoseconds) * 1e9 })
        throughputLossPercent = Spread(rounds.map { lossPercent(on: ($0.on.iterations, $0.on.wallNanoseconds),
                                                                off: ($0.off.iterations, $0.off.wallNanoseconds)) })
        stolenPerSampleExcessMicroseconds = Spread(rounds.map {
            excessPerSample(on: ($0.on.gapStolenNanoseconds, $0.on.wallNanoseconds),
                            off: ($0.off.gapStolenNanoseconds, $0.off.wallNanoseconds), samples: $0.on.profilerSignals) / 1000
        })
        let gap = GapFigures(stolen: rounds.flatMap(\.on.stolenPerSample), tails: rounds.flatMap(\.on.stolenTail))
        (stolenPerSampleGapMedianMicroseconds, stolenPerSampleGapP99Microseconds, samplesMatchedToGap) = (gap.median, gap.p99, gap.count)
        (stolenTailMedianMicroseconds, stolenTailP99Microseconds) = (gap.tailMedian, gap.tailP99)
        samplesBelowThreshold = rounds.map(\.on.belowThreshold).reduce(0, +)
        samplerCPUPercentOfCore = Spread(rounds.map { _ in 0 })
        totalCostPercentOfCore = Spread(rounds.map {
            Double($0.on.stolenPerSample.reduce(0, +)) / Double($0.on.wallNanoseconds) * 100
        })
        totalCostFromMedianPercentOfCore = Spread(rounds.map {
            Stats.median($0.on.stolenPerSample.map(Double.init)) * Double($0.on.profilerSignals) / Double($0.on.wallNanoseconds) * 100
        })
        latencyMedianMicroseconds = .nan
        latencyP99Microseconds = .nan
        handlerMedianMicroseconds = .nan
        framesMedian = .nan
        failures = 0
        processMallocsDuringSampling = 0
        samplerThreadMallocs = 0
    }
}

/// Per-sample stolen time (gap method) and its lower bound (tail), pooled over rounds, in µs.
private struct GapFigures {
    let median, p99, tailMedian, tailP99: Double
    let count: Int

    init(stolen: [Int], tails: [Int]) {
        let gaps = stolen.map { Double($0) / 1000 }
        let tailValues = tails.map { Double($0) / 1000 }
        median = Stats.median(gaps)
        p99 = Stats.percentile(gaps, 99)
        count = gaps.count
        tailMedian = Stats.median(tailValues)
        tailP99 = Stats.percentile(tailValues, 99)
    }
}

func lossPercent(on: (Int, Int), off: (Int, Int)) -> Double {
    let thr = Double(on.0) / Double(on.1)
    let thrOff = Double(off.0) / Double(off.1)
    return (1 - thr / thrOff) * 100
}

func excessPerSample(on: (Int, Int), off: (Int, Int), samples: Int) -> Double {
    let rate = Double(on.0) / Double(on.1)
    let rateOff = Double(off.0) / Double(off.1)
    return samples > 0 ? (rate - rateOff) * Double(on.1) / Double(samples) : .nan
}
