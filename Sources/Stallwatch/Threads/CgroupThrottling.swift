#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How long the process's cgroup has been held off the CPUs by its CPU quota, from cgroup v2's
/// `cpu.stat` (`throttled_usec`). A loop throttled for part of its stall was starved whatever its
/// share of the machine: the quota, not the other tasks, is what it ran out of.
enum CgroupThrottling {
    /// `/sys/fs/cgroup/<the process's v2 cgroup>/cpu.stat`, found once and kept only if it has a
    /// `throttled_usec` line: `nil` when the process is in no v2 cgroup (`/proc/self/cgroup` has no
    /// `0::` line), on a v1 or hybrid mount, or in a cgroup without the cpu controller. Every busy
    /// period's baseline reads it, so a file that is not there is not tried again each time.
    static let cpuStatPath: String? = {
        guard let text = readSmall("/proc/self/cgroup", capacity: 4096) else { return nil }
        for line in text.split(separator: UInt8(ascii: "\n")) where line.starts(with: "0::".utf8) {
            let cgroup = String(decoding: line.dropFirst(3), as: UTF8.self)
            let path = "/sys/fs/cgroup" + (cgroup == "/" ? "" : cgroup) + "/cpu.stat"
            return readSmall(path, capacity: 1024).flatMap(parse) != nil ? path : nil
        }
        return nil
    }()

    /// The cgroup's total throttled time so far; `nil` when not known (no v2 cgroup, or no
    /// `throttled_usec` line: the root cgroup and cgroups without the cpu controller have none).
    static func total() -> Duration? {
        guard let path = cpuStatPath, let text = readSmall(path, capacity: 1024) else { return nil }
        return parse(text)
    }

    /// `throttled_usec`'s value in `cpu.stat`'s text.
    static func parse(_ text: ArraySlice<UInt8>) -> Duration? {
        for line in text.split(separator: UInt8(ascii: "\n")) where line.starts(with: "throttled_usec ".utf8) {
            guard let usec = Int64(String(decoding: line.dropFirst(15), as: UTF8.self)) else { return nil }
            return .microseconds(usec)
        }
        return nil
    }

    private static func readSmall(_ path: String, capacity: Int) -> ArraySlice<UInt8>? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: capacity)
        let n = bytes.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
        return n > 0 ? bytes[..<n] : nil
    }
}
