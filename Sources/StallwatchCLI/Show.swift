import ArgumentParser
import Foundation
import StallwatchPolicy
import StallwatchReport
import StallwatchExport

/// `stallwatch show`: a stall report for people. Every name from the report is printed through
/// ``TerminalSafeText``: a report is data from another process, not text for the terminal.
struct Show: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a stall report (JSON file) for people.")

    @Argument(help: "Report files written by the watchdog.")
    var files: [String]

    @Flag(name: .long, help: "Also print every other thread's whole stack (by default, only its top frame).")
    var threads = false

    @Flag(name: .long, help: "Print every frame of the blamed stack (by default, framework and runtime frames below the service's code are folded).")
    var allFrames = false

    func run() throws {
        for (i, path) in files.enumerated() {
            if i > 0 { print("") }
            print(Self.render(LateSymbolization.named(try ReportInputs.load(path)), allStacks: threads, allFrames: allFrames))
        }
    }

    static func render(_ r: StallReport, allStacks: Bool = false, allFrames: Bool = false) -> String {
        var lines: [String] = []
        let safe = TerminalSafeText.escaped
        lines.append("\(r.kind.rawValue) \(safe(r.id)) — loop \(safe(r.loopName ?? "-")), thread \(r.thread.map(threadText) ?? "-")")
        let final = r.durationIsFinal ? "final" : "so far: written while still stalled"
        lines.append("started \(TextFormat.time(unixNanoseconds: r.startTimeUnixNanoseconds)), lasted \(TextFormat.milliseconds(r.durationNanoseconds)) (\(final); threshold \(TextFormat.milliseconds(r.thresholdNanoseconds)))")
        if let c = r.cause { lines.append("cause: \(c.kind.rawValue) — \(safe(c.evidence))") }
        if let l = r.lockWait { lines.append(contentsOf: lockWaitLines(l)) }
        if let q = r.request {
            lines.append("request: \(safe(q.summary)) (\(q.sampleCount) of \(r.sampleCount) samples)")
        }
        lines.append("blamed: \(safe(r.blamedSummary()))")
        let truncated = r.truncatedSampleCount > 0 ? "; \(r.truncatedSampleCount) with outer frames missing\(Self.stackEndsText(r.stackEnds))" : ""
        if let few = r.sampling?.fewSamplesReason { lines.append("few samples: \(safe(few))") }
        if let t = r.task {
            lines.append("task: id \(t.id), priority \(t.priorityName)")
        }
        if let why = r.asyncCallersMissing { lines.append("async callers not shown: \(safe(why))") }
        let marks = r.blamedStack.contains { $0.isAsync == true } ? "; [async] = an async function: below it, its callers from the task's async contexts" : ""
        lines.append("blamed stack (\(r.sampleCount) samples\(truncated); leaf first; [sys] = system code\(marks)):")
        lines.append(contentsOf: blamedStackLines(r.blamedStack, folded: !allFrames))
        if let others = r.otherThreads, !others.isEmpty {
            lines.append("other threads (\(others.count) of \(r.threadCount))\(allStacks ? "" : "; --threads prints their stacks"):")
            for t in others {
                let call = (t.syscall.map { " syscall \($0)" } ?? "")
                    + (t.stackAgeNanoseconds.map { String(format: "; stack sampled %.0f ms before, in its own stall", Double($0) / 1e6) } ?? "")
                if allStacks {
                    lines.append("  \(threadText(t.thread)) [\(safe(t.state))\(call)]")
                    lines.append(contentsOf: t.frames.map { "        \(frameText($0))" })
                    if t.frames.isEmpty { lines.append("        (no stack captured)") }
                } else {
                    let top = t.frames.first.map(frameText) ?? "-"
                    lines.append("  \(threadText(t.thread)) [\(safe(t.state))\(call)] \(top)")
                }
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

    /// The blamed stack, one frame a line, leaf first. Folded: every frame down to the first of the
    /// service's own code is printed (what that code called, to the leaf); below it, each run of two
    /// or more framework, runtime or thunk frames becomes one line naming their modules.
    static func blamedStackLines(_ stack: [ReportFrame], folded: Bool) -> [String] {
        let line = { (f: ReportFrame) in "  \(String(format: "%4d", f.sampleCount))  \(frameText(f))" }
        guard folded, let first = ServiceFrames.firstServiceFrame(in: stack) else { return stack.map(line) }
        var lines = stack.prefix(through: first).map(line)
        var run: [ReportFrame] = []
        func flush() {
            if run.count < 2 {
                lines.append(contentsOf: run.map(line))
            } else {
                var modules: [String] = []
                for f in run {
                    let name = foldedModuleName(f)
                    if !modules.contains(name) { modules.append(name) }
                }
                let shown = modules.prefix(4).joined(separator: ", ") + (modules.count > 4 ? ", …" : "")
                lines.append("     …  \(run.count) frames of \(TerminalSafeText.escaped(shown)) (--all-frames prints them)")
            }
            run = []
        }
        for f in stack.dropFirst(first + 1) {
            if ServiceFrames.kind(of: f) == .service {
                flush()
                lines.append(line(f))
            } else {
                run.append(f)
            }
        }
        flush()
        return lines
    }

    /// The Swift module of a folded frame, or its file's name (`libc.so.6`), or `thunks`.
    static func foldedModuleName(_ f: ReportFrame) -> String {
        if f.resolvedOrigin == .application, let symbol = f.symbol, let module = ServiceFrames.swiftModule(of: symbol) {
            return module
        }
        if ServiceFrames.kind(of: f) == .glue { return "thunks" }
        return f.module.map { ($0 as NSString).lastPathComponent } ?? "?"
    }

    /// " (frameLimit 2, noUnwindInfo 1)": why the walks stopped early, in words a reader can look up.
    static func stackEndsText(_ ends: [String: Int]?) -> String {
        guard let ends, !ends.isEmpty else { return "" }
        return " (" + ends.sorted { $0.key < $1.key }.map { "\(TerminalSafeText.escaped($0.key)) \($0.value)" }.joined(separator: ", ") + ")"
    }

    /// The whole name: the kernel keeps at most 15 bytes of a thread's name, and libdispatch keeps
    /// the tail of long queue labels, so a 15-byte name says it may be cut.
    static func threadText(_ t: ThreadIdentity) -> String {
        let cut = t.name.utf8.count >= 15 ? " (the kernel keeps 15 bytes of a name)" : ""
        return "\(t.id) \"\(TerminalSafeText.escaped(t.name))\"\(cut)"
    }

    static func frameText(_ f: ReportFrame) -> String {
        let text = FrameText.describe(symbol: f.symbol, module: f.module, offset: f.moduleOffset?.value)
        let module = f.symbol == nil ? "" : f.module.map { "  (\(($0 as NSString).lastPathComponent))" } ?? ""
        // An async function's frame: its callers below it come from the task's async contexts.
        let marks = (f.resolvedOrigin == .system ? "[sys] " : "") + (f.isAsync == true ? "[async] " : "")
        return marks + TerminalSafeText.escaped(text + module)
    }
}

enum FrameText {
    static func describe(symbol: String?, module: String?, offset: UInt64?) -> String {
        if let symbol { return symbol }
        let name = module.map { ($0 as NSString).lastPathComponent } ?? "?"
        return offset.map { "\(name)+0x\(String($0, radix: 16))" } ?? name
    }
}
