import StallwatchReport
/// matrix's annealing: while the same stack keeps stalling, report it again only after 1, 1, 2,
/// 3, 5, 8 … check rounds (Fibonacci), so a long stall yields a few reports, not one per round.
/// A different stack, or ``reset()`` when the stall ends, starts the schedule over.
///
/// Rounds are any counter that grows by one per check round of the loop.
package struct AnnealingSchedule: Sendable, Equatable {
    /// The outcome of ``admit(_:round:)``.
    package enum Verdict: Equatable, Sendable {
        /// Report now; the schedule has advanced.
        case allowed
        /// Same stack too soon; the next report may come at `nextAllowedRound`.
        case wait(nextAllowedRound: Int)
    }

    private var lastSignature: StackSignature?
    private var nextAllowedRound = 0
    // The next two Fibonacci gaps; `gap` is used next, then they shift.
    private var gap = 1
    private var followingGap = 1

    /// A schedule with nothing reported yet.
    package init() {}

    /// Decides whether `signature` may be reported in `round`, and if so records the report.
    package mutating func admit(_ signature: StackSignature, round: Int) -> Verdict {
        if signature != lastSignature {
            reset()
            lastSignature = signature
        } else if round < nextAllowedRound {
            return .wait(nextAllowedRound: nextAllowedRound)
        }
        nextAllowedRound = Self.saturatingAdd(round, gap)
        (gap, followingGap) = (followingGap, Self.saturatingAdd(gap, followingGap))
        return .allowed
    }

    /// Forgets the last stack: the next report of any stack is allowed at once.
    package mutating func reset() {
        self = AnnealingSchedule()
    }

    // A stall that outlives the Fibonacci sequence's Int range must not trap the watchdog.
    private static func saturatingAdd(_ a: Int, _ b: Int) -> Int {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? .max : sum
    }
}
