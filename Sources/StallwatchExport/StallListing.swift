import StallwatchReport
/// A report directory at a glance: its reports grouped into distinct stalls — the same cause and
/// the same dominant (blamed) stack — with how often, how long in total and at worst, and when last.
/// The follow-up and final reports of one stall (same id) count once, at their longest duration.
package struct StallListing: Sendable, Equatable {
    /// A report and the file it came from.
    package struct Input: Sendable {
        /// The decoded report.
        package var report: StallReport
        /// Where it was read from.
        package var path: String

        /// Pairs a report with its file.
        package init(report: StallReport, path: String) {
            self.report = report
            self.path = path
        }
    }

    /// One distinct stall.
    package struct Entry: Sendable, Equatable {
        /// The cause's kind (`lockWait`, …), or `unknown`.
        package var cause: String
        /// The first frames from the application's own code (``StallReport/blamedSummary(frames:)``).
        package var summary: String
        /// Loops it happened on, sorted.
        package var loops: [String]
        /// Distinct stalls (report ids).
        package var count: Int
        /// Sum of their durations, nanoseconds.
        package var totalNanoseconds: Int64
        /// The longest one, nanoseconds.
        package var longestNanoseconds: Int64
        /// When the latest one ended (or was last seen), Unix epoch nanoseconds.
        package var lastSeenUnixNanoseconds: Int64
        /// The file of the latest one.
        package var newestPath: String
    }

    /// Distinct stalls, most total time first (ties: most recent first).
    package var entries: [Entry]

    /// Groups `inputs`; CPU reports (no stalled loop) are left out.
    package init(_ inputs: [Input]) {
        // One report per stall id: the longest (the final rewrite, when there is one).
        var byID: [String: Input] = [:]
        for input in inputs where input.report.kind == .stall {
            if let known = byID[input.report.id], known.report.durationNanoseconds >= input.report.durationNanoseconds { continue }
            byID[input.report.id] = input
        }
        var groups: [String: Entry] = [:]
        for input in byID.values.sorted(by: { $0.path < $1.path }) {
            let report = input.report
            let cause = report.cause?.kind.rawValue ?? "unknown"
            // Module offsets, not addresses, for unnamed frames: addresses move with each run (ASLR).
            let stack = report.blamedStack.map { frame in
                frame.symbol ?? frame.module.map { "\($0)+\(frame.moduleOffset?.description ?? "?")" } ?? frame.address.description
            }
            let key = ([cause] + stack).joined(separator: "\u{0}")
            let end = report.startTimeUnixNanoseconds.addingReportingOverflow(report.durationNanoseconds).partialValue
            var entry = groups[key] ?? Entry(cause: cause, summary: report.blamedSummary(), loops: [], count: 0,
                                             totalNanoseconds: 0, longestNanoseconds: 0,
                                             lastSeenUnixNanoseconds: .min, newestPath: input.path)
            entry.count += 1
            entry.totalNanoseconds = entry.totalNanoseconds.addingReportingOverflow(report.durationNanoseconds).partialValue
            entry.longestNanoseconds = max(entry.longestNanoseconds, report.durationNanoseconds)
            if let loop = report.loopName, !entry.loops.contains(loop) { entry.loops = (entry.loops + [loop]).sorted() }
            if end >= entry.lastSeenUnixNanoseconds {
                entry.lastSeenUnixNanoseconds = end
                entry.newestPath = input.path
            }
            groups[key] = entry
        }
        entries = groups.values.sorted {
            ($0.totalNanoseconds, $0.lastSeenUnixNanoseconds, $1.summary) > ($1.totalNanoseconds, $1.lastSeenUnixNanoseconds, $0.summary)
        }
    }
}
