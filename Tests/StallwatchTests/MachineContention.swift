import Foundation
import Stallwatch

/// How much CPU the rest of the machine (other processes) used over a window, in cores: lets a
/// test that expects a CPU-bound verdict accept "starved" only when something else really took
/// the CPU — on a quiet machine the verdict must still be CPU-bound.
struct MachineContention {
    private let busy: Double
    private let own: Duration
    private let at: Date

    /// Starts the window now.
    init() {
        busy = Self.machineBusySeconds()
        own = (try? ProcessCPUClock().elapsed()) ?? .zero
        at = Date()
    }

    /// Cores' worth of CPU other processes used since the window began.
    var otherCores: Double {
        let wall = Date().timeIntervalSince(at)
        guard wall > 0 else { return 0 }
        let ownNow = (try? ProcessCPUClock().elapsed()) ?? .zero
        let ownSeconds = Double((ownNow - own).components.seconds) + Double((ownNow - own).components.attoseconds) / 1e18
        return max(0, (Self.machineBusySeconds() - busy - ownSeconds) / wall)
    }

    /// Non-idle CPU time of the whole machine (/proc/stat's first line), seconds.
    private static func machineBusySeconds() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first else { return 0 }
        let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard fields.count >= 8 else { return 0 }
        // user nice system idle iowait irq softirq steal: all but idle and iowait.
        let busyTicks = fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]
        return busyTicks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
