/// What `bench memory` measures in a real server: resident memory a watchdog's first
/// report adds, read from the server's /proc/PID/status. A watchdog reads symbol tables for its
/// reports; the goal is that this costs a bounded amount, not an amount that grows with the binary.
package struct MemoryFigures: Sendable, Equatable, Codable {
    /// RssAnon and RssFile added from after start-up and warm-up to after the first report, KiB
    /// (medians over the run's rounds); `nil` when no round produced a report.
    package var addedAnonKiB: Double?
    package var addedFileKiB: Double?

    /// Collects the figures; see each property.
    package init(addedAnonKiB: Double?, addedFileKiB: Double?) {
        self.addedAnonKiB = addedAnonKiB
        self.addedFileKiB = addedFileKiB
    }

    /// Anonymous and file-backed together: what `VmRSS` would show, less shared memory.
    package var addedTotalKiB: Double? {
        guard let anon = addedAnonKiB, let file = addedFileKiB else { return nil }
        return anon + file
    }
}

/// The memory goal and its verdict. Pure: the same figures always give the same verdict.
package enum MemoryGoals {
    /// Goal: the first report adds at most this much resident memory (anonymous + file-backed), KiB.
    package static let addedAfterFirstReportKiB = 4096.0

    /// The goals' keys, in the order they are printed.
    package static let keys = ["rssAfterFirstReport"]

    /// One verdict per goal, keyed as in ``keys``. A figure that was not measured (no report came)
    /// fails: a goal that was not measured is not met.
    package static func evaluate(_ f: MemoryFigures) -> [String: GoalVerdict] {
        let total = f.addedTotalKiB.flatMap { $0.isFinite ? $0 : nil }
        return ["rssAfterFirstReport": GoalVerdict(
            pass: total.map { $0 <= addedAfterFirstReportKiB } ?? false, value: total,
            goal: "≤ \(Int(addedAfterFirstReportKiB)) KiB",
            detail: "RssAnon + RssFile added by the first stall report (after start-up and warm-up → after the report), KiB, median over rounds")]
    }
}
