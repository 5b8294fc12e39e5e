#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Figures of the process and the machine read from `/proc` and `/sys`, for ``ProcessMetrics``.
/// Parsing is separate from reading so that it is tested on fixed text.
struct SystemFigures: Sendable {
    /// Busy and total jiffies of all CPUs together (the `cpu` line of `/proc/stat`).
    struct CPUTimes: Equatable, Sendable {
        var busy: UInt64
        var total: UInt64
    }

    /// The `cpu` line of `/proc/stat`: user nice system idle iowait irq softirq steal ...
    /// (guest time is already inside user and nice). Idle and iowait are not busy.
    static func parseCPUTimes(_ text: Substring) -> CPUTimes? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return nil }
        let values = line.split(separator: " ").dropFirst().prefix(8).compactMap { UInt64($0) }
        guard values.count >= 4 else { return nil }
        let total = values.reduce(0, &+)
        let idle = values[3] &+ (values.count > 4 ? values[4] : 0)
        return CPUTimes(busy: total &- idle, total: total)
    }

    /// `MemAvailable` of `/proc/meminfo`, in bytes.
    static func parseMemoryAvailable(_ text: Substring) -> UInt64? {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("MemAvailable:") }) else { return nil }
        let fields = line.split(separator: " ")
        guard fields.count >= 2, let kib = UInt64(fields[1]) else { return nil }
        return kib * 1024
    }

    /// Field 22 of `/proc/self/stat` (start time, in clock ticks after boot). The command name
    /// (field 2) may hold spaces and parentheses, so fields are counted after its last `)`.
    static func parseStartTicks(_ text: Substring) -> UInt64? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state): field 22 is fields[19].
        guard fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }

    /// A small text file (`/proc`, `/sys`), or `nil` when it cannot be read.
    static func read(_ path: String, limit: Int = 256 * 1024) -> Substring? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while bytes.count < limit {
            let n = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n <= 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return Substring(decoding: bytes, as: UTF8.self)
    }

    /// Open file descriptors: entries of `/proc/self/fd` (less the one used to list them).
    static func openFileDescriptors() -> Int? {
        guard let dir = opendir("/proc/self/fd") else { return nil }
        defer { closedir(dir) }
        var count = 0
        while let entry = readdir(dir) {
            if entry.pointee.d_name.0 != UInt8(ascii: ".") { count += 1 }
        }
        return max(count - 1, 0)
    }

    /// The current frequency of each online CPU in hertz, from cpufreq in sysfs (absent in many
    /// virtual machines: then empty).
    static func cpuFrequencies(cpus: Int) -> [(cpu: Int, hertz: Double)] {
        (0..<cpus).compactMap { cpu in
            guard let text = read("/sys/devices/system/cpu/cpu\(cpu)/cpufreq/scaling_cur_freq"),
                  let khz = Double(text.trimmingCharacters(in: " \n")) else { return nil }
            return (cpu, khz * 1000)
        }
    }

    /// How long ago the process started, in seconds, or `nil`.
    static func processAge() -> Double? {
        guard let stat = read("/proc/self/stat"), let ticks = parseStartTicks(stat),
              let sinceBoot = BootClock.seconds() else { return nil }
        let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
        guard hz > 0 else { return nil }
        return max(sinceBoot - Double(ticks) / hz, 0)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> Substring {
        var s = self
        while let c = s.first, set.contains(c) { s = s.dropFirst() }
        while let c = s.last, set.contains(c) { s = s.dropLast() }
        return s
    }
}
