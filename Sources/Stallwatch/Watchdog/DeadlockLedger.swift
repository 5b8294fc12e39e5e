/// The lock cycles already reported as deadlocks, so that each is reported once: every thread of a
/// cycle is stalled, and each one's monitor would otherwise report the same deadlock. A cycle is
/// known by its threads and the locks they wait on; one not seen for ``forgetAfter`` is forgotten
/// (its threads' ids may be reused). Used on the watchdog thread only.
final class DeadlockLedger {
    struct Cycle: Hashable {
        /// Sorted by thread id, so that every thread of the cycle finds the same key.
        var waits: [Wait]
        struct Wait: Hashable, Comparable {
            var thread: Int32
            var lock: UInt64
            static func < (a: Wait, b: Wait) -> Bool { (a.thread, a.lock) < (b.thread, b.lock) }
        }
        init(_ waits: [(thread: ThreadID, lock: UInt64)]) {
            self.waits = waits.map { Wait(thread: $0.thread.rawValue, lock: $0.lock) }.sorted()
        }
    }

    static let forgetAfter = Duration.seconds(10)
    /// Bounds the ledger whatever happens (cycles are rare; a burst of them is not kept forever).
    static let capacity = 64

    private var reported: [Cycle: (reportID: String, seen: MonotonicInstant)] = [:]
    /// The busy periods left unreported because a deadlock report carries them, by thread: such a
    /// stall stays unreported to its end, also in the last rounds after the cycle came apart (its
    /// waits time out, one thread goes on) and before it went idle.
    private var quiet: [ThreadID: (busySince: MonotonicInstant, seen: MonotonicInstant)] = [:]

    /// Whether `thread`'s busy period since `busySince` was left to a deadlock report.
    func isQuiet(_ thread: ThreadID, busySince: MonotonicInstant, now: MonotonicInstant) -> Bool {
        guard let entry = quiet[thread], entry.busySince == busySince else { return false }
        quiet[thread] = (busySince, now)
        return true
    }

    /// Leaves `thread`'s busy period since `busySince` to a deadlock report.
    func keepQuiet(_ thread: ThreadID, busySince: MonotonicInstant, now: MonotonicInstant) {
        if quiet.count >= Self.capacity { quiet = quiet.filter { now - $0.value.seen < Self.forgetAfter } }
        if quiet.count < Self.capacity { quiet[thread] = (busySince, now) }
    }

    /// The report that already carries `cycle`, if one does; the cycle is marked seen now.
    func reportID(of cycle: Cycle, now: MonotonicInstant) -> String? {
        forgetOld(now: now)
        guard let entry = reported[cycle] else { return nil }
        reported[cycle] = (entry.reportID, now)
        return entry.reportID
    }

    /// Notes that `reportID` reports `cycle`.
    func record(_ cycle: Cycle, reportID: String, now: MonotonicInstant) {
        forgetOld(now: now)
        if reported.count >= Self.capacity, let oldest = reported.min(by: { $0.value.seen < $1.value.seen })?.key {
            reported[oldest] = nil
        }
        reported[cycle] = (reportID, now)
    }

    private func forgetOld(now: MonotonicInstant) {
        if !reported.isEmpty { reported = reported.filter { now - $0.value.seen < Self.forgetAfter } }
        if !quiet.isEmpty { quiet = quiet.filter { now - $0.value.seen < Self.forgetAfter } }
    }
}
