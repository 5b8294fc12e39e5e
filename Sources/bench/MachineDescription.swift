import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Stallwatch

/// The machine a benchmark ran on, as the README table states it.
struct MachineDescription: Codable {
    var cpuModel: String
    var logicalCPUs: Int
    var numaNodes: Int
    var kernel: String
    var date: String

    static func current() -> MachineDescription {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "?" } ?? "?"
        var uts = utsname()
        uname(&uts)
        let release = withUnsafeBytes(of: uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let topology = NUMATopology.current()
        let formatter = ISO8601DateFormatter()
        return MachineDescription(cpuModel: model, logicalCPUs: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))),
                                  numaNodes: max(topology.nodes.count, 1), kernel: release, date: formatter.string(from: Date()))
    }

    var oneLine: String { "\(cpuModel), \(logicalCPUs) CPUs, \(numaNodes) NUMA node(s), Linux \(kernel), \(date); load average at start \(loadAverage)" }

    /// /proc/loadavg's first three fields: other work on the machine inflates every figure.
    var loadAverage: String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?"
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }
}
