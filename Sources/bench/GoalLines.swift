import BenchGoals

/// The `PASS`/`MISS` lines every bench ends with: one per goal, with the measured figure.
enum GoalLines {
    /// Prints `goals` in the order of `keys` (then any other key, sorted), under a heading that says
    /// a MISS is reported and never changes the exit status.
    static func print(_ goals: [String: GoalVerdict], keys: [String]) {
        Swift.print("")
        Swift.print("GOALS (one run; a MISS is reported, never hidden; the exit status stays 0)")
        let order = keys.filter { goals[$0] != nil } + goals.keys.filter { !keys.contains($0) }.sorted()
        let width = max(order.map(\.count).max() ?? 0, 20) + 2
        for key in order {
            guard let g = goals[key] else { continue }
            Swift.print("  \(g.word)  \(Fmt.pad(key, width)) \(Fmt.pad(value(g.value), 14)) goal \(Fmt.pad(g.goal, 30)) \(g.detail)")
        }
    }

    /// A figure as printed: whole numbers without decimals, others with three.
    static func value(_ v: Double?) -> String {
        v.map { Fmt.f($0, $0 == $0.rounded() ? 0 : 3) } ?? "not measured"
    }
}
