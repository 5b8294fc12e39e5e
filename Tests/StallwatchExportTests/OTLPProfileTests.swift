import Foundation
import ReportFixtures
import StallwatchExport
import StallwatchReport
import Testing

@Suite("OTLP profiles")
struct OTLPProfileTests {
    /// Decoded by the official definitions (PyPI's opentelemetry-proto), strictly, as a backend
    /// would: the same stacks and counts as the report's call tree, its facts, its trace link.
    @Test("a stall's OTLP profile decodes with the official definitions and holds the report's stacks")
    func decodesWithTheOfficialDefinitions() throws {
        var report = ReportFixture.report()
        report.request = ReportRequest(method: "GET", route: "/a", traceID: "4bf92f3577b34da6a3ce929d0e0e4736",
                                       spanID: "00f067aa0ba902b7", sampleCount: 3)
        // The first report kept its samples' times (50 ms apart, one before the start); the second did not.
        var next: Int64 = -10_000_000
        for i in report.callTree.indices where report.callTree[i].selfCount > 0 {
            report.callTree[i].sampleOffsetsNanoseconds = (0..<report.callTree[i].selfCount).map { _ in
                defer { next += 50_000_000 }
                return next
            }
        }
        var second = ReportFixture.report()
        second.id = "r-2"
        let encoder = JSONEncoder()
        let request = OTLPProfileEncoder.encode([
            .init(report: report, json: Array(try encoder.encode(report))),
            .init(report: second, json: Array(try encoder.encode(second))),
        ])
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("otlp-profile-\(getpid()).bin")
        try Data(request).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("EndToEnd/otlp_profile_check.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script.path, file.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(output)")
        #expect(output.contains("profile r-1: 3 samples in 2 stacks"), "\(output)")
        #expect(output.contains("sample times -10..90 ms of 2500, 1 outside the stall"), "\(output)")
        #expect(output.contains("profile r-2: 3 samples in 2 stacks"), "\(output)")
    }

    @Test("ids: 16 stable bytes per report; trace ids from hex, none from a malformed or zero one")
    func ids() {
        #expect(OTLPProfileEncoder.profileID("r-1").count == 16)
        #expect(OTLPProfileEncoder.profileID("r-1") == OTLPProfileEncoder.profileID("r-1"))
        #expect(OTLPProfileEncoder.profileID("r-1") != OTLPProfileEncoder.profileID("r-2"))
        #expect(OTLPProfileEncoder.hexBytes("00f067aa0ba902b7", count: 8) == [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7])
        #expect(OTLPProfileEncoder.hexBytes("00f067aa0ba902b", count: 8) == nil)
        #expect(OTLPProfileEncoder.hexBytes("zzf067aa0ba902b7", count: 8) == nil)
        #expect(OTLPProfileEncoder.hexBytes("0000000000000000", count: 8) == nil)
    }
}
