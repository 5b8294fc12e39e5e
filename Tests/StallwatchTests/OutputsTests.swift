import Foundation
import Glibc
import StallwatchPolicy
import StallwatchReport
import StallwatchExport
import Testing
@testable import Stallwatch

/// One real lock-wait stall (a watchdog watching a thread blocked on a held mutex), shared by the
/// output tests: each reads the same report through a real consumer.
enum LockStall {
    static let report: Result<StallReport, any Error> = Result {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_mutex_lock(mutex)
        let address = UInt(bitPattern: mutex)
        let log = try WatchdogEndToEndTests().watch("lock-loop", release: { pthread_mutex_unlock(mutex) }) {
            stallwatchFixtureLockWait(address)
        }
        // The final rewrite carries every sample; the first report is enough when it is missing.
        guard let report = log.stalls.last(where: \.durationIsFinal) ?? log.stalls.last else {
            throw ExternalTool.ToolMissing(description: "the watchdog reported no stall")
        }
        return report
    }

    /// The report written to `directory` as JSON, for the command-line consumers.
    static func file(in directory: String) throws -> String {
        let path = "\(directory)/lock-stall.json"
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try encoder.encode(try report.get()).write(to: URL(fileURLWithPath: path))
        return path
    }
}

@Suite("Outputs of a real stall", .serialized)
struct OutputsTests {
    @Test("libc's frames in a lock-wait stall are named and marked as the system's")
    func namedLibcFrames() throws {
        let report = try LockStall.report.get()
        #expect(report.cause?.kind == .lockWait)
        let libc = report.blamedStack.filter { $0.module?.contains("libc.so") == true }
        #expect(!libc.isEmpty)
        #expect(libc.allSatisfy { $0.symbol != nil }, "unnamed libc frames: \(libc.map { $0.moduleOffset?.description ?? "?" })")
        #expect(libc.allSatisfy { $0.origin == .system })
        let names = report.blamedStack.compactMap(\.symbol)
        #expect(names.contains { $0.hasSuffix("pthread_mutex_lock") }, "\(names)")
        // Under AddressSanitizer the thread's outermost named frame is ASan's own thread start.
        #expect(names.contains("start_thread") || names.contains { $0.hasPrefix("asan_thread_start") }, "\(names)")
        #expect(names.contains { $0.contains("lll_lock_wait") || $0.contains("futex") }, "the wait inside libc: \(names)")
        let own = try #require(report.blamedStack.first { $0.symbol?.contains("stallwatchFixtureLockWait") == true })
        #expect(own.origin == .application)
        #expect(report.blamedSummary().hasPrefix(try #require(own.symbol)), "the summary starts at the application's code")
    }

    @Test("pprof: go tool pprof reads the stall with the same frames and counts as the JSON",
          .enabled(if: ExternalTool.available("go")))
    func pprofReadByGo() throws {
        let go = try ExternalTool.require("go", package: "golang-go")
        let report = try LockStall.report.get()
        let dir = try scratchDirectory("pprof")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = "\(dir)/stall.pb.gz"
        try Data(try PprofFile.bytes(of: [report])).write(to: URL(fileURLWithPath: file))
        let env = ["HOME": dir, "GOCACHE": "\(dir)/cache", "PPROF_TMPDIR": dir]

        // -traces: every sample stack, leaf first, with its count. -symbolize=none keeps names verbatim
        // (pprof otherwise shortens anything with parentheses, as it does for C++).
        let traces = try go.run(["tool", "pprof", "-symbolize=none", "-traces", file], environment: env)
        #expect(traces.status == 0, "\(traces.stderr)")
        let expected = ReportCallTreeNode.leafPaths(report.callTree).map { path, count in
            Trace(count: count, frames: path.reversed().map { StallProfile.name(report.callTree[$0], in: report) })
        }
        #expect(Trace.parse(traces.output).sorted() == expected.sorted(), "\(traces.output)")

        // -top: flat and cumulative counts per function.
        let top = try go.run(["tool", "pprof", "-symbolize=none", "-top", "-nodecount=1000", "-nodefraction=0", file], environment: env)
        #expect(top.status == 0, "\(top.stderr)")
        #expect(top.output.contains("Total samples = \(report.sampleCount)"), "\(top.output)")
        var flat: [String: Int] = [:]
        for trace in expected { flat[trace.frames[0], default: 0] += trace.count }
        let rows = TopRow.parse(top.output)
        for (name, count) in flat {
            #expect(rows.first { $0.name == name }?.flat == count, "\(name) in \(top.output)")
        }
        // The stall's facts are labels on the samples.
        #expect(traces.output.contains("stall_id:  \(report.id)") || traces.output.contains("stall_id: \(report.id)"), "\(traces.output)")
        #expect(traces.output.contains("lockWait"))
    }

    @Test("pprof: protoc decodes the bytes against the canonical profile.proto",
          .enabled(if: ExternalTool.available("protoc")))
    func pprofDecodedByProtoc() throws {
        let protoc = try ExternalTool.require("protoc", package: "protobuf-compiler")
        let report = try LockStall.report.get()
        let dir = try scratchDirectory("protoc")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let raw = "\(dir)/stall.pb"
        let bytes = PprofEncoder.encode(StallProfile(reports: [report]))
        try Data(bytes).write(to: URL(fileURLWithPath: raw))
        let schema = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures")
        // protoc reads the message from standard input: run it through sh to redirect.
        let sh = try ExternalTool.require("sh", package: "dash")
        let decoded = try sh.run(["-c", "\"$0\" --proto_path=\"$1\" --decode perftools.profiles.Profile profile.proto < \"$2\"",
                                  protoc.path, schema.path, raw])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let text = decoded.output
        #expect(text.components(separatedBy: "\nsample {").count - 1 == ReportCallTreeNode.leafPaths(report.callTree).count)
        #expect(text.contains("string_table: \"\"\n"), "index 0 is the empty string")
        #expect(text.contains("has_functions: true"))
        for node in report.callTree { if let s = node.symbol { #expect(text.contains(Self.protoText(s)), "\(s)") } }
        if let id = report.blamedStack.compactMap(\.buildID).first { #expect(text.contains("string_table: \"\(id)\"")) }
        // And the gzip layer is a real gzip stream of exactly these bytes.
        #expect(try Compression.inflate(PprofFile.bytes(of: [report]), limit: 1 << 24) == bytes)
    }

    @Test("flame graph: headless Chromium draws it (not blank) with the blamed function in the DOM",
          .enabled(if: ExternalTool.available("chromium")))
    func flameGraphInChromium() throws {
        let chromium = try ExternalTool.require("chromium", package: "chromium")
        let report = try LockStall.report.get()
        let dir = try scratchDirectory("flame")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let svgPath = "\(dir)/stall.svg"
        let svg = FlameGraphSVG.render(StallProfile(reports: [report]), title: "lock stall", subtitle: report.blamedSummary())
        try svg.write(toFile: svgPath, atomically: true, encoding: .utf8)
        let common = ["--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(dir)/profile", "--hide-scrollbars"]

        let png = "\(dir)/shot.png"
        let shot = try chromium.run(common + ["--window-size=1200,600", "--screenshot=\(png)", "file://\(svgPath)"],
                                    environment: ["HOME": dir])
        #expect(shot.status == 0, "\(shot.stderr)")
        let image = try PNGImage(Array(try Data(contentsOf: URL(fileURLWithPath: png))))
        #expect(image.width == 1200)
        let colours = Set(image.pixels)
        #expect(colours.count > 20, "a blank or single-colour screenshot: \(colours.count) colours")
        let background = Dictionary(grouping: image.pixels, by: { $0 }).max { $0.value.count < $1.value.count }?.key
        let drawn = image.pixels.filter { $0 != background }.count
        #expect(drawn * 20 > image.pixels.count, "under 5 % of the screenshot is drawn: \(drawn) of \(image.pixels.count)")

        // The DOM after the script ran, searched for the blamed function (matched frames marked).
        let blamed = try #require(report.blamedStack.first { $0.origin == .application && $0.symbol != nil }?.symbol)
        let dom = try chromium.run(common + ["--dump-dom", "file://\(svgPath)?s=stallwatchFixtureLockWait"], environment: ["HOME": dir])
        #expect(dom.status == 0, "\(dom.stderr)")
        #expect(dom.output.contains(FlameGraphSVG.xml(blamed)), "\(dom.output.prefix(2000))")
        #expect(dom.output.contains("class=\"f match\""), "the search from the URL highlighted no frame")
        #expect(dom.output.contains("Matched: "))
    }

    /// How protoc's text format prints a string (escapes non-ASCII as octal).
    static func protoText(_ s: String) -> String {
        s.utf8.map { b -> String in
            switch b {
            case 0x22: return "\\\""
            case 0x5c: return "\\\\"
            case 0x27: return "\\'"
            case 0x20..<0x7f: return String(UnicodeScalar(b))
            default: return "\\" + String(b, radix: 8).leftPadded(to: 3)
            }
        }.joined()
    }
}

private extension String {
    func leftPadded(to n: Int) -> String { String(repeating: "0", count: max(0, n - count)) + self }
}

extension StallProfile {
    /// The name the profile gives a call tree node of `report`.
    static func name(_ node: ReportCallTreeNode, in report: StallReport) -> String {
        let profile = StallProfile(reports: [report])
        return profile.frames.first { $0.address == node.address.value && $0.module == node.module }?.name ?? "?"
    }
}

/// One stack of `go tool pprof -traces`: its count and frames, leaf first.
struct Trace: Comparable {
    var count: Int
    var frames: [String]

    static func < (a: Trace, b: Trace) -> Bool { (a.frames.joined(separator: "\n"), a.count) < (b.frames.joined(separator: "\n"), b.count) }

    /// Blocks between `-----------+----` rules; the first line of a stack starts with its count,
    /// label lines (`key:  value`) come before it.
    static func parse(_ output: String) -> [Trace] {
        var traces: [Trace] = []
        for block in output.components(separatedBy: "-----------+-------------------------------------------------------").dropFirst() {
            var current: Trace?
            for line in block.split(separator: "\n", omittingEmptySubsequences: true) {
                let trimmed = line.drop { $0 == " " }
                if current == nil {
                    let parts = trimmed.split(separator: " ", maxSplits: 1)
                    if parts.count == 2, let count = Int(parts[0]) {
                        current = Trace(count: count, frames: [String(parts[1].drop { $0 == " " })])
                    }
                } else {
                    current?.frames.append(String(trimmed))
                }
            }
            if let current { traces.append(current) }
        }
        return traces
    }
}

/// A row of `go tool pprof -top`: flat count and function name.
struct TopRow {
    var flat: Int
    var name: String

    static func parse(_ output: String) -> [TopRow] {
        output.split(separator: "\n").compactMap { line in
            // "      12   100%   100%         12   100%  name": five columns, then the name (spaces and all).
            var rest = Substring(line)
            var columns: [Substring] = []
            for _ in 0..<5 {
                rest = rest.drop { $0 == " " }
                let column = rest.prefix { $0 != " " }
                columns.append(column)
                rest = rest.dropFirst(column.count)
            }
            guard let flat = Int(columns[0]), columns[1].hasSuffix("%"), columns[4].hasSuffix("%") else { return nil }
            return TopRow(flat: flat, name: String(rest.drop { $0 == " " }))
        }
    }
}
