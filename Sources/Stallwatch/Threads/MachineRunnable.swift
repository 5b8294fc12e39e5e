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
    /// The same, as C wants it: a String passed to `open` is copied into a new array each call.
    private static let pathBytes = Array(path.utf8CString)

    /// Where the count comes from, in the evidence (one string, not one per read).
    static let source = "\(path) at the stall's last check"

    /// The count, less the watchdog thread reading it (it is on a CPU as it reads, but sleeps
    /// through nearly all of a stall), or why it could not be read, in words for the evidence.
    /// Read every round of a stall: nothing is allocated unless it fails.
    static func read() -> Result<MachineRunnableCount, MachineRunnableUnread> {
        let fd = open(pathBytes, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(MachineRunnableUnread("opening \(path): errno \(errno)")) }
        defer { close(fd) }
        // "0.52 0.58 0.59 3/1234 5678\n": well under 128 bytes.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { bytes in
            let n = systemRead(fd, bytes.baseAddress, bytes.count)
            guard n > 0 else { return .failure(MachineRunnableUnread("reading \(path): \(n < 0 ? "errno \(errno)" : "empty")")) }
            guard let running = parse(UnsafeBufferPointer(rebasing: bytes[..<n])) else {
                return .failure(MachineRunnableUnread("\(path) has no running/total field"))
            }
            return .success(MachineRunnableCount(count: max(running - 1, 0), source: source))
        }
    }

    /// The `running` of the fourth whitespace-separated field `running/total`.
    static func parse<Text: Collection<UInt8>>(_ text: Text) -> Int? {
        var field = 0
        var inField = false
        var value = 0
        var digits = 0
        for byte in text {
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") {
                if inField { field += 1 }
                inField = false
                continue
            }
            inField = true
            guard field == 3 else { continue }
            // The fourth field: digits up to the slash.
            if byte == UInt8(ascii: "/") {
                return digits > 0 ? value : nil
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 18 else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
        }
        return nil
    }
}

/// Why the machine's runnable tasks could not be read.
struct MachineRunnableUnread: Error, Equatable {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}
