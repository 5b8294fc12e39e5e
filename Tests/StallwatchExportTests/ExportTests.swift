import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import ReportFixtures
import StallwatchPolicy
import StallwatchReport
import StallwatchExport
import Testing

@Suite struct ProtobufWriterTests {
    @Test("varints, tags and packed fields follow the protobuf encoding guide's examples")
    func wireFormat() {
        // The guide's examples: field 1 = 150 is 08 96 01; a string "testing" in field 2 is 12 07 …
        var w = ProtobufWriter()
        w.uint64(1, 150)
        w.string(2, "testing")
        #expect(w.bytes == [0x08, 0x96, 0x01, 0x12, 0x07] + Array("testing".utf8))
        var packed = ProtobufWriter()
        packed.packed(4, [3, 270, 86942])
        #expect(packed.bytes == [0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05])
        var negative = ProtobufWriter()
        negative.int64(1, -1)
        #expect(negative.bytes == [0x08] + Array(repeating: 0xff, count: 9) + [0x01])
        var zero = ProtobufWriter()
        zero.uint64(1, 0)
        zero.bool(2, false)
        #expect(zero.bytes.isEmpty, "proto3 leaves default values out")
    }
}

@Suite struct StallProfileTests {
    @Test("stacks are the call tree's leaf paths with their self counts; every sample is kept")
    func stacksMatchCallTree() {
        let report = ReportFixture.report()
        let profile = StallProfile(reports: [report])
        #expect(profile.sampleCount == report.sampleCount)
        let fromTree = ReportCallTreeNode.leafPaths(report.callTree).map { path, count in
            (path.map { report.callTree[$0].symbol ?? "" }, count)
        }
        let fromProfile = profile.stacks.map { stack in (stack.frames.map { profile.frames[$0].name }, stack.count) }
        #expect(fromProfile.map(\.0) == fromTree.map(\.0))
        #expect(fromProfile.map(\.1) == fromTree.map(\.1))
        // Build id and load base come from the blamed stack's frames.
        let module = profile.modules.first { $0.path == "/usr/bin/app" }
        #expect(module?.buildID == "ab12")
        #expect(module?.base == 0x10)
    }

    @Test("an unnamed frame is named by module and offset when the load base is known")
    func unnamedFrames() {
        var report = ReportFixture.report()
        report.callTree = report.callTree.map { node in
            var n = node
            n.symbol = nil
            return n
        }
        let profile = StallProfile(reports: [report])
        #expect(profile.frames.allSatisfy { $0.name.hasPrefix("app+0x") }, "\(profile.frames.map(\.name))")
    }

    @Test("the application's modules come first (pprof takes the first mapping for the main binary)")
    func applicationModuleFirst() {
        var report = ReportFixture.report()
        var libc = report.callTree[0]
        libc.module = "/lib/x86_64-linux-gnu/libc.so.6"
        report.callTree.insert(libc, at: 0)
        for i in report.callTree.indices.dropFirst() where report.callTree[i].parent >= 0 { report.callTree[i].parent += 1 }
        report.callTree[1].parent = -1
        let profile = StallProfile(reports: [report])
        #expect(profile.modules.map(\.path) == ["/usr/bin/app", "/lib/x86_64-linux-gnu/libc.so.6"])
    }
}

@Suite struct FlameGraphTests {
    @Test("boxes: roots span all samples, children never overflow their parent")
    func layout() {
        let report = ReportFixture.report()
        let layout = FlameGraphLayout(StallProfile(reports: [report]))
        #expect(layout.total == report.sampleCount)
        let roots = layout.boxes.filter { $0.depth == 0 }
        #expect(roots.reduce(0) { $0 + $1.count } == layout.total)
        for (i, box) in layout.boxes.enumerated() where box.depth > 0 {
            let parent = layout.boxes[..<i].last { $0.depth == box.depth - 1 }
            #expect(parent.map { $0.start <= box.start && box.start + box.count <= $0.start + $0.count } == true)
        }
    }

    @Test("the SVG is well-formed XML even with hostile names, and names every frame")
    func wellFormed() throws {
        var report = ReportFixture.report()
        report.callTree[report.callTree.count - 1].symbol = "evil<&>\"'\u{1b}[2J\u{0}"
        let svg = FlameGraphSVG.render(StallProfile(reports: [report]), title: "t <1>", subtitle: "s & s")
        let parser = XMLParser(data: Data(svg.utf8))
        #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        #expect(!svg.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
        #expect(svg.contains("evil&lt;&amp;&gt;&quot;&apos;\\x1b[2J\\x00"))
        for node in report.callTree.dropLast() { #expect(svg.contains(try #require(node.symbol))) }
        #expect(!svg.contains("http://") || !svg.contains("href="), "self-contained: no links out")
    }
}

@Suite struct TerminalSafeTextTests {
    @Test("control characters, DEL, C1 and direction overrides are escaped; the rest is unchanged")
    func escapes() {
        #expect(TerminalSafeText.escaped("Server.handle(_:) -> ()") == "Server.handle(_:) -> ()")
        #expect(TerminalSafeText.escaped("a\u{1b}[2Jb") == "a\\x1b[2Jb")
        #expect(TerminalSafeText.escaped("line\nnext\r\t") == "line\\x0anext\\x0d\\x09")
        #expect(TerminalSafeText.escaped("\u{7f}\u{9b}") == "\\x7f\\x9b")
        #expect(TerminalSafeText.escaped("abc\u{202e}fed") == "abc\\u{202e}fed")
        #expect(TerminalSafeText.escaped("a\\x1b") == "a\\\\x1b", "a literal backslash cannot pass for an escape")
        #expect(TerminalSafeText.escaped("日本語 ✓") == "日本語 ✓")
    }
}

@Suite struct StallListingTests {
    static func report(id: String, start seconds: Int64, milliseconds: Int64, symbol: String, cause: StallCauseKind = .lockWait) -> StallReport {
        var r = StallReport(kind: .stall, id: id, cause: StallCause(kind: cause, evidence: "e"), loopName: "loop",
                            startTimeUnixNanoseconds: seconds * 1_000_000_000, duration: .milliseconds(milliseconds), durationIsFinal: true,
                            blamedStack: [ReportFrame(address: 1, info: SymbolInfo(module: "/usr/bin/app", symbol: symbol), sampleCount: 1)],
                            threadCount: 1, configuration: WatchdogConfiguration())
        r.sampleCount = 1
        return r
    }

    @Test("one line per stack and cause, the rewrites of one stall counted once, most total time first")
    func groups() {
        let inputs = [
            Self.report(id: "a", start: 1_000, milliseconds: 600, symbol: "f()"),
            Self.report(id: "a", start: 1_000, milliseconds: 1_500, symbol: "f()"),   // the final rewrite of a
            Self.report(id: "b", start: 9_000, milliseconds: 700, symbol: "f()"),
            Self.report(id: "c", start: 5_000, milliseconds: 3_000, symbol: "g()"),
            Self.report(id: "d", start: 6_000, milliseconds: 100, symbol: "f()", cause: .cpuBound),
        ].enumerated().map { StallListing.Input(report: $1, path: "/r/\($0).json") }
        let entries = StallListing(inputs).entries
        #expect(entries.map(\.summary) == ["g()", "f()", "f()"])
        #expect(entries.map(\.cause) == ["lockWait", "lockWait", "cpuBound"])
        let f = entries[1]
        #expect(f.count == 2)
        #expect(f.totalNanoseconds == 2_200_000_000)
        #expect(f.longestNanoseconds == 1_500_000_000)
        #expect(f.newestPath == "/r/2.json")
        #expect(f.lastSeenUnixNanoseconds == 9_000 * 1_000_000_000 + 700_000_000)
    }
}
