#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import StallwatchPolicy

/// The tasks runnable on the whole machine now, from the fourth field of `/proc/loadavg`
/// (`running/total`: the kernel's count of tasks in state R across every CPU). A stalled thread
/// that gets under half a core is starved only if it got clearly less than its share of the cores
/// among these; the count is what that share is taken from.
enum MachineRunnable {
    static let path = "/proc/loadavg"

    /// The count, less the watchdog thread reading it (it is on a CPU as it reads, but sleeps
    /// through nearly all of a stall), or why it could not be read, in words for the evidence.
    static func read() -> Result<MachineRunnableCount, MachineRunnableUnread> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(MachineRunnableUnread("opening \(path): errno \(errno)")) }
        defer { close(fd) }
        // "0.52 0.58 0.59 3/1234 5678\n": well under 128 bytes.
        var bytes = [UInt8](repeating: 0, count: 128)
        let n = bytes.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return .failure(MachineRunnableUnread("reading \(path): \(n < 0 ? "errno \(errno)" : "empty")")) }
        guard let running = parse(bytes[..<n]) else {
            return .failure(MachineRunnableUnread("\(path) has no running/total field"))
        }
        return .success(MachineRunnableCount(count: max(running - 1, 0), source: "\(path) at the stall's last check"))
    }

    /// The `running` of the fourth whitespace-separated field `running/total`.
    static func parse(_ text: ArraySlice<UInt8>) -> Int? {
        let fields = text.split(whereSeparator: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") })
        guard fields.count >= 4 else { return nil }
        let pair = fields[3].split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard pair.count == 2, !pair[0].isEmpty, pair[0].allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let value = Int(String(decoding: pair[0], as: UTF8.self)) else { return nil }
        return value
    }
}

/// Why the machine's runnable tasks could not be read.
struct MachineRunnableUnread: Error, Equatable {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}
