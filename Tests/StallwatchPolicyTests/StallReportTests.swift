import Foundation
import StallwatchPolicy
import Testing

@Suite struct StallReportTests {
    static func makeReport(otherThreads: [ThreadStack]? = nil) -> StallReport {
        let tree = CallTree(samples: [sample(0x100, 0x200, 0x300), sample(0x100, 0x200, 0x300), sample(0x100, 0x400)])
        let names: [FrameKey: String] = [0x100: "main", 0x200: "Server.handle()", 0x300: "parse(_:)", 0x400: "log(_:)"]
        let describe = { (key: FrameKey) in
            SymbolInfo(module: "/usr/bin/app", moduleOffset: key.address - 0x10, buildID: "ab12", symbol: names[key])
        }
        return StallReport(
            kind: .stall, id: "r-1",
            cause: CauseClassifier().classify(ThreadEvidence(state: "R", cpuTimeDelta: .seconds(2), wallDelta: .seconds(2), threadCount: 4)),
            loopName: "NIO-ELT-0-#0", thread: ThreadIdentity(id: 4242, name: "NIO-ELT-0-#0"),
            startTimeUnixNanoseconds: 1_763_800_000_000_000_000, duration: .milliseconds(2500), durationIsFinal: false,
            sampleCount: tree.sampleCount,
            blamedStack: ReportFrame.blamedStack(of: tree, describe: describe),
            callTree: ReportCallTreeNode.flatten(tree, describe: describe),
            otherThreads: otherThreads, threadCount: 4,
            threadCPU: [ThreadCPUUsage(thread: ThreadIdentity(id: 4242, name: "NIO-ELT-0-#0"), cpuPercent: 99.5)],
            process: ProcessFacts(cpuPercent: 120, residentBytes: 50_000_000, cores: 2),
            numa: NUMAFacts(nodes: [NUMANode(id: 0, cpus: [0, 1], memoryBytes: 4 << 30, freeBytes: 1 << 30)], stalledThreadNode: 0),
            configuration: WatchdogConfiguration(),
            counters: ReportCounters(filteredSinceLastReport: 3, suppressedSinceLastReport: 0, suppressedTotal: 0))
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
        let tree = CallTree(samples: [StackSample(frames: frames.map { FrameKey(pc: $0, functionStart: $0) }),
                                      StackSample(frames: frames.map { FrameKey(pc: $0, functionStart: $0) })])
        let nodes = ReportCallTreeNode.flatten(tree) { SymbolInfo(symbol: "f\($0.address)") }
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
