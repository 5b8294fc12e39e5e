import StallwatchPolicy
import StallwatchReport

/// One round's time for one-off captures of stalled threads that have no sample yet, and which
/// loops spent it: a report without a stack then says truthfully why it has none (it said "spent
/// on other stalled loops" on a single stall whose round had merely started late).
struct CaptureBudget {
    let end: MonotonicInstant
    let limit: Duration
    private var spenders: [(loop: ObjectIdentifier, name: String)] = []

    init(end: MonotonicInstant, limit: Duration) {
        self.end = end
        self.limit = limit
    }

    func remaining(at now: MonotonicInstant) -> Duration {
        end > now ? end - now : .zero
    }

    /// Records that `loop` used some of the budget.
    mutating func spend(by loop: ObjectIdentifier, name: String) {
        spenders.append((loop, name))
    }

    /// Why `loop` got no capture once the budget is gone, naming only what really used it.
    func exhaustedReason(for loop: ObjectIdentifier) -> String {
        let others = spenders.filter { $0.loop != loop }.map(\.name)
        let limitText = "\(limit.clampedNanoseconds / 1_000_000) ms"
        if others.isEmpty {
            return "this round's \(limitText) for captures had run out before this loop's turn (the round started late or its scans were slow); no other loop used it"
        }
        let names = Set(others).sorted().joined(separator: ", ")
        return "this round's \(limitText) for captures was spent on \(others.count) other stalled loop\(others.count == 1 ? "" : "s") (\(names))"
    }
}
