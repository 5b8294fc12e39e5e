/// The figures `bench allocations` judges its goals on; `nil` means the run did not measure it.
package struct AllocationFigures: Sendable, Equatable, Codable {
    /// Allocations on the watchdog thread per idle round, median over the runs.
    package var perIdleRound: Double?
    /// Allocations on the watchdog thread per report of one sampled stall (the stall's first and
    /// final report, and the drains and scans between them, ÷ 2), median over the runs.
    package var perReport: Double?

    /// Collects the figures; see each property for its meaning and unit.
    package init(perIdleRound: Double?, perReport: Double?) {
        self.perIdleRound = perIdleRound
        self.perReport = perReport
    }
}

/// `bench allocations`' goals (an allocation-free watchdog steady state). Pure.
package enum AllocationGoals {
    /// Goal: allocations per report, at most.
    package static let perReport = 50.0

    /// The goals' keys, in the order they are printed.
    package static let keys = ["idleRoundAllocations", "reportAllocations"]

    /// One verdict per goal, keyed as in ``keys``.
    package static func evaluate(_ f: AllocationFigures) -> [String: GoalVerdict] {
        [
            "idleRoundAllocations": .atMost(f.perIdleRound, 0, goal: "0 per idle round",
                                            detail: "mallocs on the watchdog thread while every loop is idle, per round (its timeslices)"),
            "reportAllocations": .atMost(f.perReport, perReport, goal: "≤ \(Int(perReport)) per report",
                                         detail: "mallocs on the watchdog thread from a stall's start to 300 ms after its end (drains, scans, first and final report) ÷ 2 reports"),
        ]
    }
}
