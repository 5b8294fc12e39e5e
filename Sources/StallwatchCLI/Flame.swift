import ArgumentParser
import StallwatchPolicy
import StallwatchReport
import StallwatchExport

/// `stallwatch flame`: an interactive SVG flame graph of reports' samples.
struct Flame: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw reports' samples as a self-contained SVG flame graph (open it in a browser).",
        discussion: "Hover a frame for its samples, click to zoom, Search (or Ctrl+F, or ?s=REGEX in the URL) to highlight. Application frames are warm-coloured, system frames blue."
    )

    @Argument(help: "Report files written by the watchdog.")
    var files: [String]

    @Option(name: .shortAndLong, help: "Write the SVG here instead of standard output.")
    var output: String?

    func run() throws {
        let reports = try ReportInputs.loadAll(files)
        let profile = StallProfile(reports: reports)
        let svg = FlameGraphSVG.render(profile, title: Self.title(reports), subtitle: Self.subtitle(reports, samples: profile.sampleCount))
        try CommandOutput.write(Array(svg.utf8), to: output, binary: false)
    }

    static func title(_ reports: [StallReport]) -> String {
        guard reports.count == 1, let r = reports.first else { return "\(reports.count) stalls" }
        let cause = r.cause?.kind.rawValue ?? "stall"
        return "\(cause) on \(r.loopName ?? "-") for \(TextFormat.milliseconds(r.durationNanoseconds))\(r.durationIsFinal ? "" : " (so far)")"
    }

    static func subtitle(_ reports: [StallReport], samples: Int) -> String {
        guard reports.count == 1, let r = reports.first else { return "\(samples) samples" }
        let blamed = r.blamedSummary(frames: 1)
        // The subtitle is one line across the graph: about 170 characters fit.
        let fitted = blamed.count > 140 ? String(blamed.prefix(138)) + ".." : blamed
        return "blamed: \(fitted) — \(samples) samples"
    }
}
