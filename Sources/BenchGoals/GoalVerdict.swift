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

/// The comparisons every bench's goals are made of. A figure that is `nil`, NaN or infinite was not
/// measured (or not measurably): its verdict is a MISS with no value, never a PASS by default.
extension GoalVerdict {
    /// Met when `value ≤ limit` (a goal's limit is inclusive).
    package static func atMost(_ value: Double?, _ limit: Double, goal: String, detail: String) -> GoalVerdict {
        let v = finite(value)
        return GoalVerdict(pass: v.map { $0 <= limit } ?? false, value: v, goal: goal, detail: detail)
    }

    /// Met when `value < limit` ("below": a tie is not below).
    package static func below(_ value: Double?, _ limit: Double, goal: String, detail: String) -> GoalVerdict {
        let v = finite(value)
        return GoalVerdict(pass: v.map { $0 < limit } ?? false, value: v, goal: goal, detail: detail)
    }

    /// Met when `|value| < tolerance`: "≈ 0" for a figure measured as a difference, which may fall below 0.
    package static func nearZero(_ value: Double?, tolerance: Double, goal: String, detail: String) -> GoalVerdict {
        let v = finite(value)
        return GoalVerdict(pass: v.map { abs($0) < tolerance } ?? false, value: v, goal: goal, detail: detail)
    }

    /// `a ÷ b`, or `nil` when either was not measured or `b` is not positive.
    package static func ratio(_ a: Double?, _ b: Double?) -> Double? {
        guard let a = finite(a), let b = finite(b), b > 0 else { return nil }
        return a / b
    }

    private static func finite(_ value: Double?) -> Double? {
        value.flatMap { $0.isFinite ? $0 : nil }
    }
}
