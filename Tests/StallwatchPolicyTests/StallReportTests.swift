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
            callTree: ReportCallTreeNode.forest(of: tree, describe: describe),
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
            "blamedStack", "callTree", "threadCount", "threadCPU", "process", "numa", "configuration", "counters",
        ])
        #expect(object["schemaVersion"] as? Int == 1)
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
        #expect(report.callTree.first?.children.map(\.count) == [2, 1])
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
}
