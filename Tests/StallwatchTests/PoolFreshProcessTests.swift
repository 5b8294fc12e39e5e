import Foundation
import Glibc
import Testing

/// The process's first pool job and the pool deadlock, each in fresh processes (`stallwatch demo`
/// with a pool scenario): what a service sees right after it starts. Few runs per case (each takes
/// seconds); events read from the demo's standard output.
@Suite("Pool stalls in fresh processes", .serialized)
struct PoolFreshProcessTests {
    static let runs = 3

    /// Runs the demo once; returns its event lines.
    func demo(_ arguments: [String]) throws -> [String] {
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("stallwatch").path
        try #require(FileManager.default.isExecutableFile(atPath: exe), "build the stallwatch product first (\(exe))")
        let child = Process()
        child.executableURL = URL(fileURLWithPath: exe)
        child.arguments = ["demo", "--threshold-ms", "500"] + arguments
        let out = Pipe()
        child.standardOutput = out
        child.standardError = FileHandle.nullDevice
        try child.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init).filter { $0.hasPrefix("{") }
    }

    @Test("the first pool job, stalling 1.5 s, is reported once and named",
          arguments: ["pool-first-cpu", "pool-first-blocked", "pool-first-child", "pool-first-async"])
    func firstJob(scenario: String) throws {
        for run in 0..<Self.runs {
            let lines = try demo(["--scenario", scenario, "--stall-seconds", "1.5", "--seconds", "3", "--pool-delay-ms", "0"])
            let stalls = lines.filter { $0.contains(#""event":"stall""#) && $0.contains(#""loop":"cooperative-pool-job""#) }
            #expect(stalls.count == 1, "run \(run): \(lines)")
            #expect(stalls.allSatisfy { $0.contains("demoComputeChecksums") || $0.contains("demoPool") || $0.contains("demoSleep") },
                    "run \(run): \(stalls)")
        }
    }

    @Test("every pool worker blocked: one pool report, no job reported twice")
    func deadlock() throws {
        for run in 0..<Self.runs {
            let lines = try demo(["--scenario", "pool-deadlock", "--stall-seconds", "3", "--seconds", "4.5", "--pool-delay-ms", "300"])
            let stalls = lines.filter { $0.contains(#""event":"stall""#) }
            #expect(stalls.count { $0.contains(#""loop":"cooperative-pool""#) } == 1, "run \(run): \(lines)")
            let jobThreads = stalls.filter { $0.contains(#""loop":"cooperative-pool-job""#) }
                .compactMap { line in line.range(of: #""thread":"[0-9]+"#, options: .regularExpression).map { String(line[$0]) } }
            #expect(!jobThreads.isEmpty && Set(jobThreads).count == jobThreads.count, "run \(run): \(lines)")
        }
    }
}
