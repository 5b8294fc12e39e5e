import ArgumentParser
import BenchGoals
import Foundation

/// `bench allocations`: what the watchdog thread allocates when all is idle and during one sampled
/// stall, counted by the bench's own `malloc` (per thread, by tid).
struct AllocationsBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "allocations",
        abstract: "Allocations on the watchdog thread: per idle round, and per report of one sampled stall.",
        discussion: """
        A watchdog at a 500 ms threshold (reports written to a temporary directory) goes through one
        warm-up stall of a spinning heartbeat loop, --idle-seconds of idle, then one measured stall
        of --stall-ms, --rounds times. Goals: 0 allocations per idle round; ≤ 50 per report.
        """
    )

    @Option(help: "Measured rounds (each: idle, then one stall).")
    var rounds: Int = 3
    @Option(name: .customLong("idle-seconds"), help: "Idle time measured per round.")
    var idleSeconds: Double = 2
    @Option(name: .customLong("stall-ms"), help: "The measured stall's length.")
    var stallMilliseconds: Int = 1500
    @Option(help: "Also write the figures and goals as JSON (a BenchRecord) to this file.")
    var json: String?

    func validate() throws {
        guard rounds >= 1 else { throw ValidationError("--rounds must be ≥ 1") }
        guard idleSeconds > 0 else { throw ValidationError("--idle-seconds must be > 0") }
        guard stallMilliseconds >= 600 else { throw ValidationError("--stall-ms must be ≥ 600 (the threshold is 500 ms)") }
    }

    func run() throws {
        let start = RunStart.now()
        print("bench allocations: \(start.machine.oneLine)")
        var list: [WatchdogStallAllocations] = []
        for _ in 0..<rounds {
            list.append(try measureWatchdogStallAllocations(stallMilliseconds: stallMilliseconds, idleSeconds: idleSeconds))
        }
        for (i, a) in list.enumerated() {
            print("round \(i + 1): idle \(a.idleMallocs) mallocs in \(a.idleRounds) rounds; stall: \(a.beforeDetection) to the first report, \(a.whileStalled) while stalled, \(a.finalReport) for the final report; \(a.processWide) process-wide")
        }
        let perIdleRound = Spread(list.map { Double($0.idleMallocs) / Double(max($0.idleRounds, 1)) })
        let perReport = Spread(list.map { Double($0.watchdogThread) / 2 }) // two reports a stall: first and final
        print(String(format: "mallocs per idle round %.2f [%.2f…%.2f]; per report %.0f [%.0f…%.0f]", perIdleRound.median, perIdleRound.min,
                     perIdleRound.max, perReport.median, perReport.min, perReport.max))
        let figures = AllocationFigures(perIdleRound: perIdleRound.median, perReport: perReport.median)
        let goals = AllocationGoals.evaluate(figures)
        GoalLines.print(goals, keys: AllocationGoals.keys)
        if let json {
            try BenchRecord(bench: "allocations", start: start, goals: goals,
                            figures: AllocationsRecord(summary: figures, rounds: list)).write(to: json)
        }
    }
}

/// `bench allocations --json`: the judged figures and every round's counts.
struct AllocationsRecord: Encodable {
    var summary: AllocationFigures
    var rounds: [WatchdogStallAllocations]
}
