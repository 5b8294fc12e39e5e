import StallwatchReport

/// When a pool job began and ended, from what the scans of its thread saw: pure, so each rule is
/// tested on the scan sequences that once dated a job wrong. ``PoolJobWatcher`` gathers the scans.
///
/// A scan either concludes something of the thread (in which job it is, or that it is in none) or
/// only sees it away from its wait for work: blocked elsewhere with no stack that names a job, or
/// running without a signal to see which job. A job's start lies after the last conclusive scan
/// that saw the thread outside it, its end before the first that saw it out of it; the rules below
/// place them inside that span.
enum PoolJobDating {
    /// A conclusive scan: when, the thread's demand for a core then (CPU time plus run-queue wait,
    /// ns), and whether it was running.
    typealias Conclusion = (at: MonotonicInstant, demand: UInt64, running: Bool)
    /// A scan that saw the thread run briefly: when, and its demand then.
    typealias Mark = (at: MonotonicInstant, demand: UInt64)

    /// Below this share of a core wanted since its previous scan, a thread found running (and not
    /// signalled) ran briefly: a short job's work, not a long job's. A worker serving light load
    /// wanted 2–6 % between scans; a job that mixes CPU with blocking calls (an fsync storm) wants
    /// about 40 %, so the scan after it began reads below this only when it began in the last
    /// tenth of a 40 ms interval, and then dates it that late at most.
    static let briefRunShare = 0.1

    /// At or above this share of a core wanted since its previous scan, a running thread runs a
    /// CPU-bound job, which its demand dates: `bigfile` (reads, half of them from disk) wanted up to
    /// 60 % in an interval, and dated by its demand it came 43–52 ms late in CI's stall matrix.
    static let cpuBoundShare = 0.9

    /// The share of a core wanted between `mark` and now, if the demand reads are in order.
    static func share(since mark: Mark, now: MonotonicInstant, demandNow: UInt64) -> Double? {
        guard now > mark.at, let wanted = demand(from: mark.demand, to: demandNow) else { return nil }
        return Double(wanted) / Double((now - mark.at).clampedNanoseconds)
    }

    /// The demand between two reads of it, `nil` if either is missing or they are out of order.
    static func demand(from earlier: UInt64?, to later: UInt64?) -> UInt64? {
        guard let earlier, let later, later >= earlier else { return nil }
        return later - earlier
    }

    /// Whether the thread wanted less than ``briefRunShare`` of a core since `mark`.
    static func wantedLittle(since mark: Mark, now: MonotonicInstant, demandNow: UInt64?) -> Bool {
        guard let demandNow else { return false }
        return isBriefRun(share: share(since: mark, now: now, demandNow: demandNow))
    }

    /// Whether a thread found running, not signalled, with `share` of a core wanted since its
    /// previous scan, ran briefly. In a job that wanted `jobShare` up to the scan before, it is
    /// also brief below half of that: a CPU-bound job that ran on would have wanted all of it (one
    /// that ended just after a scan, in Vapor, read 11 % at the next and was dated 58 ms long).
    static func isBriefRun(share: Double?, jobShare: Double? = nil) -> Bool {
        guard let share else { return false }
        return share < max(briefRunShare, (jobShare ?? 0) / 2)
    }

    /// When a job first seen now began.
    /// - `previous`: the last conclusive scan (outside this job).
    /// - `briefRun`: the newest scan since then that saw the thread run briefly (``isBriefRun(share:jobShare:)``)
    ///   before any other sign of it away. A worker serving short requests is caught running one in
    ///   about one scan in six under light load; taken for the next long job's first sign, it dated
    ///   that job a whole scan period early (−50 … −60 ms, the stall matrix's tails). The job began
    ///   after it when the thread wanted little of a core since (a job that blocks), or is on the
    ///   CPU now (`onCPU`: ``cpuBoundShare`` of a core since the scan before; a CPU-bound job, its
    ///   demand dates it). Otherwise the run was the job's
    ///   own first sign: an fsync storm's first 40 ms on a new file want as little (2–7 %) as a
    ///   short request, and dated from after it, a 360 ms storm read 282 ms and went unreported.
    /// - `awaySince`: the first scan since then (and since `briefRun`) that saw it away otherwise.
    ///   A job first seen after such scans began before the first of them: blocked now, the demand
    ///   says nothing; running, it says too little when the job also blocks (its wall time is more
    ///   than its demand).
    /// - `afterJob`: the thread was in another job at `previous`. Running then and now, it ran both
    ///   jobs, so its demand cannot tell where one ended: the start is taken between the scans, not
    ///   at the previous one (a compression job seen over 40 ms before it really ended, in Vapor,
    ///   where the response's own job followed it on the same worker).
    static func start(previous: Conclusion?, briefRun: Mark?, awaySince: MonotonicInstant?, now: MonotonicInstant,
                      demandNow: UInt64?, runningNow: Bool, onCPU: Bool = false,
                      afterJob: Bool = false) -> MonotonicInstant {
        if afterJob, let previous, previous.running, runningNow, previous.at < now {
            return previous.at + (now - previous.at) / 2
        }
        var after = previous
        var awaySince = awaySince
        if let brief = briefRun, let p = previous, brief.at > p.at, brief.at < now {
            if (runningNow && onCPU) || wantedLittle(since: brief, now: now, demandNow: demandNow) {
                after = (brief.at, brief.demand, true)
            } else {
                awaySince = min(awaySince ?? brief.at, brief.at)
            }
        }
        let demandSince = demand(from: after?.demand, to: demandNow)
        var start = start(after: after, now: now, demandSince: demandSince, runningNow: runningNow)
        if let after, let away = awaySince, away > after.at, away < now, !runningNow || start > away {
            start = after.at + (away - after.at) / 2
        }
        return start
    }

    /// When a job seen at `previous` and found over now ended.
    /// - `awaySeenAt`: the newest scan since then that saw the thread away, concluding nothing: the
    ///   job was still running then (one that also blocks ran past its demand).
    /// - `briefRunInJob`: the first of only brief runs seen since `previous` (and since `awaySeenAt`):
    ///   the job ended before it (a blocked job's wake-up ends it, and the run was the worker's next
    ///   work), after `awaySeenAt`.
    static func end(previous: Conclusion?, awaySeenAt: MonotonicInstant?, briefRunInJob: Mark?, now: MonotonicInstant,
                    demandNow: UInt64?) -> MonotonicInstant {
        if let previous, let brief = briefRunInJob, brief.at > previous.at, brief.at < now,
           awaySeenAt.map({ $0 < brief.at }) ?? true {
            var end = end(after: previous, now: brief.at,
                          demandSince: demand(from: previous.demand, to: brief.demand))
            if let seen = awaySeenAt, seen > previous.at { end = max(end, seen + (brief.at - seen) / 2) }
            return end
        }
        let demandSince = demand(from: previous?.demand, to: demandNow)
        var end = end(after: previous, now: now, demandSince: demandSince)
        if let previous, let seen = awaySeenAt, seen > previous.at, seen < now {
            end = max(end, seen + (now - seen) / 2)
        }
        return end
    }

    /// When a job first seen now began: `demandSince` before now if the thread is running (it
    /// ran the job all along), between the scans if it is blocked; never before the previous scan.
    static func start(after previous: Conclusion?, now: MonotonicInstant, demandSince: UInt64?,
                      runningNow: Bool) -> MonotonicInstant {
        guard let previous, previous.at < now else { return now }
        let gap = now - previous.at
        guard runningNow, let demand = demandSince else { return previous.at + gap / 2 }
        let ran = Duration.nanoseconds(Int64(clamping: demand))
        return ran >= gap ? previous.at : now - ran
    }

    /// When a job seen at the previous scan and gone now ended: after the demand it still had if
    /// it was running then, else between the scans.
    static func end(after previous: Conclusion?, now: MonotonicInstant,
                    demandSince: UInt64?) -> MonotonicInstant {
        guard let previous, previous.at < now else { return now }
        let gap = now - previous.at
        guard previous.running, let demand = demandSince else { return previous.at + gap / 2 }
        let ran = Duration.nanoseconds(Int64(clamping: demand))
        return ran >= gap ? now : previous.at + ran
    }
}
