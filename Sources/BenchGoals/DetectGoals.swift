/// One threshold of `bench detect`'s sweep: every stall's detection latency, and the stalls never reported.
package struct DetectThresholdFigures: Sendable, Equatable, Codable {
    package var thresholdMilliseconds: Int
    /// Stall start (`busy()`) to the stall event, ms, one per reported stall.
    package var latenciesMilliseconds: [Double]
    /// Stalls that were never reported.
    package var missed: Int

    /// See the properties.
    package init(thresholdMilliseconds: Int, latenciesMilliseconds: [Double], missed: Int) {
        self.thresholdMilliseconds = thresholdMilliseconds
        self.latenciesMilliseconds = latenciesMilliseconds
        self.missed = missed
    }
}

/// One many-loops case of `bench detect`, as far as its goals need it.
package struct DetectManyLoopsFigures: Sendable, Equatable, Codable {
    package var loops: Int
    package var stalled: Int
    /// `true` when the stalled loops spin on the CPU, `false` when they sleep.
    package var spinning: Bool
    package var thresholdMilliseconds: Int
    package var stalls: Int
    package var missed: Int
    package var duplicates: Int
    /// p99 of the reported stalls' detection latencies, ms (NaN when none was reported).
    package var latencyP99Milliseconds: Double
    /// A bare thread at the watchdog's nice value among the same loops: its wake lateness p99, ms
    /// (the scheduler's floor for this case), when measured.
    package var bareWakeLatenessP99Milliseconds: Double?

    /// See the properties.
    package init(loops: Int, stalled: Int, spinning: Bool, thresholdMilliseconds: Int, stalls: Int, missed: Int,
                 duplicates: Int, latencyP99Milliseconds: Double, bareWakeLatenessP99Milliseconds: Double? = nil) {
        (self.loops, self.stalled, self.spinning, self.thresholdMilliseconds) = (loops, stalled, spinning, thresholdMilliseconds)
        (self.stalls, self.missed, self.duplicates, self.latencyP99Milliseconds) = (stalls, missed, duplicates, latencyP99Milliseconds)
        self.bareWakeLatenessP99Milliseconds = bareWakeLatenessP99Milliseconds
    }
}

/// `bench detect`'s goals. Pure: the same figures always give the same verdicts.
package enum DetectGoals {
    /// Goal: a stall is detected at most this many percent of its threshold after the threshold.
    package static let latencyOverThresholdPercent = 10

    /// The latency limit for a threshold, ms; in integers first, so 100 ms gives exactly 110.
    package static func limitMilliseconds(_ threshold: Int) -> Double {
        Double(threshold * (100 + latencyOverThresholdPercent)) / 100
    }
    /// The case of the goal "64 spinning loops stalled at once on 2 cores".
    package static let spinningLoops = 64

    /// The key of one threshold's goal, e.g. `latency500ms`.
    package static func thresholdKey(_ milliseconds: Int) -> String { "latency\(milliseconds)ms" }

    /// The goals' keys for a run with these thresholds, in the order they are printed.
    package static func keys(thresholds: [Int]) -> [String] {
        thresholds.map(thresholdKey) + ["spinning\(spinningLoops)P99", "everyStallOnce"]
    }

    /// One verdict per goal, keyed as in ``keys(thresholds:)``. A missed stall counts as infinitely
    /// late, so a threshold or case with a missed stall fails its latency goal. Cases not run are MISSes.
    package static func evaluate(thresholds: [DetectThresholdFigures], manyLoops: [DetectManyLoopsFigures]) -> [String: GoalVerdict] {
        var out: [String: GoalVerdict] = [:]
        for t in thresholds {
            let limit = limitMilliseconds(t.thresholdMilliseconds)
            let worst = t.missed > 0 || t.latenciesMilliseconds.isEmpty ? nil : t.latenciesMilliseconds.max()
            out[thresholdKey(t.thresholdMilliseconds)] = .atMost(
                worst, limit, goal: "≤ \(formatted(limit)) ms (threshold + 10 %)",
                detail: "worst of \(t.latenciesMilliseconds.count + t.missed) stalls, busy() to stall event, \(t.thresholdMilliseconds) ms threshold"
                    + (t.missed > 0 ? "; \(t.missed) never reported" : ""))
        }
        let spin = manyLoops.first { $0.spinning && $0.stalled == spinningLoops && $0.loops == spinningLoops }
        let spinLimit = spin.map { limitMilliseconds($0.thresholdMilliseconds) }
        out["spinning\(spinningLoops)P99"] = .atMost(
            spin.flatMap { $0.missed > 0 ? nil : $0.latencyP99Milliseconds }, spinLimit ?? 0,
            goal: spinLimit.map { "≤ \(formatted($0)) ms (threshold + 10 %)" }
                ?? "≤ threshold + 10 %",
            detail: spin.map { "p99 detection latency, \(spinningLoops) spinning loops stalled at once, \($0.stalls) stalls, \($0.thresholdMilliseconds) ms threshold"
                + ($0.missed > 0 ? "; \($0.missed) never reported" : "")
                + ($0.bareWakeLatenessP99Milliseconds.map { "; a bare nice -10 sleeper among them woke late by p99 \(formatted(($0 * 10).rounded() / 10)) ms" } ?? "") }
                ?? "the case of \(spinningLoops) spinning loops was not run")
        let stalls = manyLoops.map(\.stalls).reduce(0, +)
        let wrong = manyLoops.map { $0.missed + $0.duplicates }.reduce(0, +)
        out["everyStallOnce"] = .atMost(manyLoops.isEmpty ? nil : Double(wrong), 0, goal: "0 missed or duplicated",
                                        detail: "stalls not reported exactly once, over every many-loops case (\(stalls) stalls: "
                                            + "\(manyLoops.map(\.missed).reduce(0, +)) missed, \(manyLoops.map(\.duplicates).reduce(0, +)) duplicated)")
        return out
    }

    /// A limit as printed: no trailing `.0`.
    private static func formatted(_ x: Double) -> String {
        x == x.rounded() ? String(Int(x)) : String(x)
    }
}
