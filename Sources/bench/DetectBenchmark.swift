import ArgumentParser
import Foundation
import Glibc
import Stallwatch
import StallwatchPolicy
import Synchronization

/// `bench detect`: from the moment a loop stalls to the moment its report is delivered.
struct DetectBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "detect",
        abstract: "Detection latency (stall start to report) for several thresholds.",
        discussion: """
        For each threshold, a loop thread calls busy() and spins past the threshold --repeats times;
        the time from busy() to the stall event is the detection latency. Goal: ≤ threshold + 10 %.
        """
    )

    @Option(help: "Thresholds in milliseconds, comma-separated.")
    var thresholds: String = "100,500,2000"

    @Option(help: "Stalls per threshold.")
    var repeats: Int = 5

    func run() throws {
        let values = thresholds.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !values.isEmpty, values.allSatisfy({ $0 > 0 }) else { throw ValidationError("--thresholds: positive integers, e.g. 100,500,2000") }
        guard repeats >= 1 else { throw ValidationError("--repeats must be ≥ 1") }
        print("bench detect: \(MachineDescription.current().oneLine)")
        print("threshold   latency median [min…max]   over threshold   goal ≤ +10 %")
        for ms in values {
            let reportedAt = Atomic<Int>(0)
            let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(ms))) { event in
                if case .stall = event { reportedAt.store(Workload.now(), ordering: .releasing) }
            }
            let probe = watchdog.makeProbe(name: "detect-\(ms)")
            try watchdog.start()
            var latencies: [Double] = []
            for _ in 0..<repeats {
                reportedAt.store(0, ordering: .relaxed)
                let start = Atomic<Int>(0)
                let spinner = Thread {
                    start.store(Workload.now(), ordering: .releasing)
                    probe.busy()
                    let end = Workload.now() + ms * 1_000_000 * 2 + 200_000_000
                    while Workload.now() < end && reportedAt.load(ordering: .acquiring) == 0 {}
                    probe.idle()
                }
                spinner.start()
                while reportedAt.load(ordering: .acquiring) == 0 && (start.load(ordering: .acquiring) == 0 ||
                      Workload.now() - start.load(ordering: .acquiring) < ms * 3_000_000 + 500_000_000) {
                    usleep(1000)
                }
                let r = reportedAt.load(ordering: .acquiring)
                if r > 0 { latencies.append(Double(r - start.load(ordering: .acquiring)) / 1e6) }
                usleep(UInt32(min(ms, 500)) * 1000 + 100_000) // let the stall end and the loop settle
            }
            watchdog.stop()
            let s = Spread(latencies)
            let over = (s.median / Double(ms) - 1) * 100
            print(String(format: "%6d ms   %8.1f ms [%.1f…%.1f]        %+6.1f %%        %@%@", ms, s.median, s.min, s.max, over,
                         over <= 10 ? "met" : "NOT met", latencies.count < repeats ? " (\(repeats - latencies.count) missed)" : ""))
        }
    }
}
