import BenchGoals
import Foundation

/// What every bench writes with `--json FILE`: when, where and how it ran, the verdict on each of
/// its goals, and its own figures. `scripts/overhead-tables.py` builds the README's overhead tables
/// from these files alone, so no figure there is typed by hand.
struct BenchRecord<Figures: Encodable>: Encodable {
    /// The bench's name (`sampler`, `probe`, `detect`, `server`, …).
    var bench: String
    /// The command line as run (`bench` and its arguments).
    var command: String
    /// The machine, with the date (ISO 8601, UTC) the run began.
    var machine: MachineDescription
    /// /proc/loadavg's first three fields at the start and at the end: other work inflates figures.
    var loadAtStart: String
    var loadAtEnd: String
    /// Seconds the run took.
    var seconds: Double
    /// One verdict per goal, keyed by a stable name.
    var goals: [String: GoalVerdict]
    /// The bench's own figures.
    var figures: Figures

    /// Writes the record as sorted, pretty-printed JSON (non-finite numbers as strings).
    func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        try encoder.encode(self).write(to: URL(fileURLWithPath: path))
        print("figures written to \(path)")
    }
}

/// When and where a run began: the machine, the load average then, the time.
struct RunStart {
    var machine: MachineDescription
    var load: String
    var at: Date

    /// Now, on this machine.
    static func now() -> RunStart {
        let machine = MachineDescription.current()
        return RunStart(machine: machine, load: machine.loadAverage, at: Date())
    }
}

extension BenchRecord {
    /// A record for a run that began at `start` and ends now.
    init(bench: String, start: RunStart, goals: [String: GoalVerdict], figures: Figures) {
        self.init(bench: bench, start: (start.machine, start.load, start.at), goals: goals, figures: figures)
    }

    /// A record for a run that began at `start` (with the machine and load read then) and ends now.
    init(bench: String, start: (machine: MachineDescription, load: String, at: Date), goals: [String: GoalVerdict], figures: Figures) {
        self.init(bench: bench, command: (["bench"] + CommandLine.arguments.dropFirst()).joined(separator: " "),
                  machine: start.machine, loadAtStart: start.load, loadAtEnd: MachineDescription.current().loadAverage,
                  seconds: Date().timeIntervalSince(start.at), goals: goals, figures: figures)
    }
}
