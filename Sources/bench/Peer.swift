import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A peer profiler run in a child `bench workload` process, loaded with LD_PRELOAD so that
/// Stallwatch never depends on it.
enum PeerKind: String, CaseIterable {
    /// The child without any profiler: the peer rows' baseline.
    case off = "peer-off"
    /// gperftools' CPU profiler, default unwinder (libunwind on Debian).
    case gperftoolsDefault = "gperftools/libunwind"
    /// gperftools' CPU profiler with its frame-pointer unwinder.
    case gperftoolsFP = "gperftools/generic_fp"
}

/// Spawns `bench workload` children with and without gperftools' CPU profiler.
struct PeerRunner {
    static let library = "/usr/lib/x86_64-linux-gnu/libprofiler.so.0"
    static var available: Bool { access(library, R_OK) == 0 }

    let executable: String
    let depth: Int
    let intervalMilliseconds: Double
    let seconds: Double
    var workingSetMiB = 0

    func run(_ kind: PeerKind) throws -> WorkloadReport {
        let profile = NSTemporaryDirectory() + "stallwatch-bench-\(getpid())-\(kind == .gperftoolsFP ? "fp" : "lu").prof"
        defer { unlink(profile) }
        var env = ProcessInfo.processInfo.environment
        env["LD_PRELOAD"] = nil
        env["CPUPROFILE"] = nil
        if kind != .off {
            env["LD_PRELOAD"] = Self.library
            env["CPUPROFILE"] = profile
            env["CPUPROFILE_FREQUENCY"] = String(Int((1000 / intervalMilliseconds).rounded()))
            if kind == .gperftoolsFP { env["TCMALLOC_STACKTRACE_METHOD"] = "generic_fp" }
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["workload", "--seconds", String(seconds), "--depth", String(depth),
                             "--working-set-mib", String(workingSetMiB), "--json"]
        process.environment = env
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchError("bench workload (\(kind.rawValue)) exited with status \(process.terminationStatus)")
        }
        let report = try JSONDecoder().decode(WorkloadReport.self, from: data)
        if kind != .off && !report.profilerActive {
            throw BenchError("gperftools did not install its SIGPROF handler in the child (\(kind.rawValue))")
        }
        return report
    }
}
