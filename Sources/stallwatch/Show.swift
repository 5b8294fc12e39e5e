import ArgumentParser
import Foundation
import StallwatchPolicy

/// `stallwatch show`: a stall report for people.
struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a stall report (JSON file) for people.")

    @Argument(help: "Report files written by the watchdog.")
    var files: [String]

    func run() throws {
        for (i, path) in files.enumerated() {
            if i > 0 { print("") }
            let report = try ReportFile.load(path)
            print(Self.render(report))
        }
    }

    static func render(_ r: StallReport) -> String {
        var lines: [String] = []
        let start = Date(timeIntervalSince1970: Double(r.startTimeUnixNanoseconds) / 1e9)
        let ms = { (ns: Int64) in String(format: "%.1f ms", Double(ns) / 1e6) }
        lines.append("\(r.kind.rawValue) \(r.id) — loop \(r.loopName ?? "-"), thread \(r.thread.map { "\($0.id) \($0.name)" } ?? "-")")
        lines.append("started \(ISO8601DateFormatter().string(from: start)), lasted \(ms(r.durationNanoseconds))\(r.durationIsFinal ? "" : " so far") (threshold \(ms(r.thresholdNanoseconds)))")
        if let c = r.cause { lines.append("cause: \(c.kind.rawValue) — \(c.evidence)") }
        let truncated = r.truncatedSampleCount > 0 ? "; \(r.truncatedSampleCount) cut at the frame limit, their outer frames missing" : ""
        lines.append("blamed stack (\(r.sampleCount) samples\(truncated); leaf first):")
        for f in r.blamedStack {
            lines.append("  \(String(format: "%4d", f.sampleCount))  \(FrameText.describe(symbol: f.symbol, module: f.module, offset: f.moduleOffset?.value))")
        }
        if let others = r.otherThreads, !others.isEmpty {
            lines.append("other threads (\(others.count) of \(r.threadCount)):")
            for t in others {
                let top = t.frames.first.map { FrameText.describe(symbol: $0.symbol, module: $0.module, offset: $0.moduleOffset?.value) } ?? "-"
                let call = t.syscall.map { " syscall \($0)" } ?? ""
                lines.append("  \(t.thread.id) \(t.thread.name) [\(t.state)\(call)] \(top)")
            }
        } else {
            lines.append("threads: \(r.threadCount)")
        }
        if let p = r.process {
            lines.append(String(format: "process: CPU %.1f %% of a core (%d cores), resident %.1f MiB", p.cpuPercent, p.cores, Double(p.residentBytes) / 1_048_576))
        }
        let c = r.counters
        if c.filteredSinceLastReport + c.suppressedSinceLastReport + c.suppressedTotal > 0 {
            lines.append("not reported before this one: \(c.filteredSinceLastReport) filtered, \(c.suppressedSinceLastReport) over the daily cap (\(c.suppressedTotal) in all)")
        }
        return lines.joined(separator: "\n")
    }
}

/// `stallwatch fold`: the sampled call tree as folded stacks (`root;…;leaf count`), the input of
/// FlameGraph's flamegraph.pl, speedscope and Pyroscope's /ingest.
struct Fold: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a report's call tree as folded stacks for flame graphs.")

    @Argument(help: "Report files written by the watchdog.")
    var files: [String]

    func run() throws {
        var counts: [String: Int] = [:]
        for path in files {
            let report = try ReportFile.load(path)
            let names = report.callTree.map {
                FrameText.describe(symbol: $0.symbol, module: $0.module, offset: nil).replacingOccurrences(of: ";", with: ":")
            }
            for (path, count) in ReportCallTreeNode.leafPaths(report.callTree) {
                counts[path.map { names[$0] }.joined(separator: ";"), default: 0] += count
            }
        }
        for (stack, count) in counts.sorted(by: { $0.key < $1.key }) { print("\(stack) \(count)") }
    }
}

/// A report file that cannot be read or is not a report (not a usage mistake: no usage banner).
struct ReportFileError: Error, CustomStringConvertible {
    let description: String
}

enum ReportFile {
    static func load(_ path: String) throws -> StallReport {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ReportFileError(description: "cannot read \(path): \(error.localizedDescription)")
        }
        do {
            return try JSONDecoder().decode(StallReport.self, from: data)
        } catch {
            throw ReportFileError(description: "\(path) is not a Stallwatch report this version reads (schema 1...\(StallReport.currentSchemaVersion)): \(error)")
        }
    }
}

enum FrameText {
    static func describe(symbol: String?, module: String?, offset: UInt64?) -> String {
        if let symbol { return symbol }
        let name = module.map { ($0 as NSString).lastPathComponent } ?? "?"
        return offset.map { "\(name)+0x\(String($0, radix: 16))" } ?? name
    }
}
