import ArgumentParser
import StallwatchPolicy
import StallwatchReport
import StallwatchExport

/// `stallwatch fold`: the sampled call tree as folded stacks (`root;…;leaf count`), the input of
/// FlameGraph's flamegraph.pl, speedscope and Pyroscope's /ingest.
struct Fold: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a report's call tree as folded stacks for flame graphs.")

    @Argument(help: "Report files written by the watchdog.")
    var files: [String]

    func run() throws {
        var counts: [String: Int] = [:]
        for path in files {
            let report = try ReportInputs.load(path)
            // Folded stacks are one line per stack: names must not break the line or the fields.
            let names = report.callTree.map {
                TerminalSafeText.escaped(FrameText.describe(symbol: $0.symbol, module: $0.module, offset: nil))
                    .replacingOccurrences(of: ";", with: ":")
            }
            for (path, count) in ReportCallTreeNode.leafPaths(report.callTree) {
                counts[path.map { names[$0] }.joined(separator: ";"), default: 0] += count
            }
        }
        for (stack, count) in counts.sorted(by: { $0.key < $1.key }) { print("\(stack) \(count)") }
    }
}
