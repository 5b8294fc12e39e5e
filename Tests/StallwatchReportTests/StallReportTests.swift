import Foundation
import ReportFixtures
import StallwatchPolicy
import StallwatchReport
import Testing

@Suite struct StallReportTests {
    static func makeReport(otherThreads: [ThreadStack]? = nil) -> StallReport {
        ReportFixture.report(otherThreads: otherThreads)
    }

    @Test func roundTripsAndUsesStableCamelCaseKeys() throws {
        let report = Self.makeReport()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(report)
        #expect(try JSONDecoder().decode(StallReport.self, from: data) == report)

        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(object.keys) == [
            "schemaVersion", "kind", "id", "cause", "loopName", "thread", "startTimeUnixNanoseconds",
            "durationNanoseconds", "durationIsFinal", "thresholdNanoseconds", "sequenceInStall", "sampleCount",
            "blamedStack", "truncatedSampleCount", "callTree", "threadCount", "threadCPU", "process", "numa",
            "configuration", "counters", "watchdogLatenessNanoseconds",
        ])
        #expect(object["schemaVersion"] as? Int == 2)
        #expect(object["kind"] as? String == "stall")
        #expect(object["thresholdNanoseconds"] as? Int == 2_000_000_000)
        let json = try #require(String(data: data, encoding: .utf8))
        #expect(json.contains(#""kind":"cpuBound""#))
        #expect(json.contains(#""address":"0x300""#))
    }

    @Test func blamedStackIsLeafFirstWithCounts() {
        let report = Self.makeReport()
        #expect(report.blamedStack.map(\.symbol) == ["parse(_:)", "Server.handle()", "main"])
        #expect(report.blamedStack.map(\.sampleCount) == [2, 2, 3])
        #expect(report.blamedStack.first?.moduleOffset == ReportAddress(0x2f0))
        // Flat, depth-first: main, its heavier child Server.handle() and its callee, then log(_:).
        #expect(report.callTree.map(\.symbol) == ["main", "Server.handle()", "parse(_:)", "log(_:)"])
        #expect(report.callTree.map(\.parent) == [-1, 0, 1, 0])
        #expect(report.callTree.map(\.count) == [3, 2, 2, 1])
    }

    @Test func otherThreadsAbsentWhenNotCaptured() throws {
        let data = try JSONEncoder().encode(Self.makeReport(otherThreads: nil))
        #expect(!(try #require(String(data: data, encoding: .utf8))).contains("otherThreads"))
        let with = Self.makeReport(otherThreads: [ThreadStack(thread: ThreadIdentity(id: 1, name: "main"), state: "S", syscall: 202, frames: [])])
        #expect(try JSONDecoder().decode(StallReport.self, from: JSONEncoder().encode(with)).otherThreads?.count == 1)
    }

    @Test func addressesDecodeFromHexOrIntegers() throws {
        let decoded = try JSONDecoder().decode([ReportAddress].self, from: Data(#"["0x1f", 31, "0X1F"]"#.utf8))
        #expect(decoded == [ReportAddress(31), ReportAddress(31), ReportAddress(31)])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([ReportAddress].self, from: Data(#"["zz"]"#.utf8)) }
    }

    @Test("a 2 000-frame call tree encodes, decodes and folds (nested JSON would stop at 512 levels)")
    func deepTree() throws {
        let depth = 2000
        let frames = (0..<depth).map { UInt64(0x1000 + $0 * 16) }
        var tree = CallTree(samples: [StackSample(frames: frames.map { FrameKey(pc: $0, functionStart: $0) }),
                                      StackSample(frames: frames.map { FrameKey(pc: $0, functionStart: $0) })])
        let names = FrameTable(describing: tree) { SymbolInfo(symbol: "f\($0.address)") }
        let nodes = ReportCallTreeNode.flatten(&tree, frames: names)
        #expect(nodes.count == depth)
        let report = StallReport(kind: .stall, id: "deep", startTimeUnixNanoseconds: 0, duration: .seconds(1),
                                 durationIsFinal: true, sampleCount: 2, callTree: nodes, threadCount: 1,
                                 configuration: WatchdogConfiguration())
        let decoded = try JSONDecoder().decode(StallReport.self, from: JSONEncoder().encode(report))
        #expect(decoded == report)
        let paths = ReportCallTreeNode.leafPaths(decoded.callTree)
        #expect(paths.count == 1)
        #expect(paths.first?.path.count == depth)
        #expect(paths.first?.selfCount == 2)
    }

    @Test("a schema 1 file (nested call tree) still decodes, flattened")
    func readsVersionOne() throws {
        var object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(Self.makeReport())) as? [String: Any])
        object["schemaVersion"] = 1
        object["truncatedSampleCount"] = nil
        object["watchdogLatenessNanoseconds"] = nil
        object["callTree"] = [[
            "address": "0x100", "symbol": "main", "count": 3, "selfCount": 0, "children": [
                ["address": "0x200", "symbol": "Server.handle()", "count": 2, "selfCount": 0, "children": [
                    ["address": "0x300", "symbol": "parse(_:)", "count": 2, "selfCount": 2, "children": []],
                ]],
                ["address": "0x400", "symbol": "log(_:)", "count": 1, "selfCount": 1, "children": []],
            ],
        ]]
        let decoded = try JSONDecoder().decode(StallReport.self, from: JSONSerialization.data(withJSONObject: object))
        #expect(decoded.schemaVersion == 1)
        #expect(decoded.callTree.map(\.symbol) == Self.makeReport().callTree.map(\.symbol))
        #expect(decoded.callTree.map(\.parent) == [-1, 0, 1, 0])
    }

    @Test("a newer schema is refused, naming the version")
    func refusesNewerSchema() throws {
        var object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(Self.makeReport())) as? [String: Any])
        object["schemaVersion"] = 999
        #expect {
            try JSONDecoder().decode(StallReport.self, from: JSONSerialization.data(withJSONObject: object))
        } throws: { "\($0)".contains("999") }
    }
}

