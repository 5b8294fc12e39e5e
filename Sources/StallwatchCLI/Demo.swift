import ArgumentParser
import CSampler
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Stallwatch
import StallwatchPolicy
import StallwatchReport
import StallwatchExport

/// `stallwatch demo`: a loop that stalls the chosen way, watched by a real watchdog.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a loop that stalls (cpu, lock, socket, sleep) or stays healthy, and print what the watchdog reports.",
        discussion: "Events are printed one JSON object per line on standard output; reports are also written to --report-dir when given."
    )

    @Option(help: "What the loop does: \(Demo.scenarioNames.joined(separator: ", ")).")
    var scenario: String = "cpu"

    @Option(name: .customLong("threshold-ms"), help: "Stall threshold in milliseconds.")
    var thresholdMilliseconds: Int = 500

    @Option(name: .customLong("stall-seconds"), help: "How long the stalling work lasts.")
    var stallSeconds: Double = 1.5

    @Option(help: "How long the demo runs, in seconds.")
    var seconds: Double = 4

    @Option(name: .customLong("suspension-limit-ms"), help: "A watchdog round this late means the process was stopped (ms).")
    var suspensionLimitMilliseconds: Int = 10_000

    @Option(name: .customLong("report-dir"), help: "Directory for JSON reports.")
    var reportDirectory: String?

    @Option(name: .customLong("pool-delay-ms"), help: "Pool scenarios: how long after the watchdog starts the first pool job comes (ms).")
    var poolDelayMilliseconds: Int = 100

    @Flag(help: "Print whole reports, not just a summary line per event.")
    var full = false

    func validate() throws {
        guard DemoScenario(rawValue: scenario) != nil || DemoPoolScenario(rawValue: scenario) != nil else {
            throw ValidationError("unknown scenario '\(scenario)'; choose one of \(Demo.scenarioNames.joined(separator: ", "))")
        }
        guard thresholdMilliseconds > 0 else { throw ValidationError("--threshold-ms must be positive") }
        // Finite and bounded: the values become sleep lengths, and a day is more than any demo needs.
        guard stallSeconds.isFinite, stallSeconds >= 0, stallSeconds <= Self.maximumSeconds else {
            throw ValidationError("--stall-seconds must be a number from 0 to \(Int(Self.maximumSeconds))")
        }
        guard seconds.isFinite, seconds > 0, seconds <= Self.maximumSeconds else {
            throw ValidationError("--seconds must be a number above 0 and at most \(Int(Self.maximumSeconds))")
        }
        guard suspensionLimitMilliseconds > 0 else { throw ValidationError("--suspension-limit-ms must be positive") }
    }

    /// Every scenario: the loop's, then the pool's.
    static var scenarioNames: [String] {
        DemoScenario.allCases.map(\.rawValue) + DemoPoolScenario.allCases.map(\.rawValue)
    }

    /// The longest --seconds or --stall-seconds accepted: one day.
    static let maximumSeconds: Double = 86_400

    func run() throws {
        let configuration = WatchdogConfiguration(threshold: .milliseconds(thresholdMilliseconds),
                                                  suspensionLimit: .milliseconds(suspensionLimitMilliseconds))
        let encoder = JSONEncoder()
        encoder.outputFormatting = full ? [.prettyPrinted, .sortedKeys] : [.sortedKeys]
        let printLock = NSLock()
        let full = self.full
        let watchdog = try Watchdog(configuration: configuration, reportDirectory: reportDirectory) { event in
            printLock.lock()
            defer { printLock.unlock() }
            print(Demo.describe(event, encoder: encoder, full: full))
            fflush(nil)
        }
        if let pool = DemoPoolScenario(rawValue: scenario) {
            try runOnPool(pool, watchdog: watchdog)
            return
        }
        guard let kind = DemoScenario(rawValue: scenario) else { return }
        let probe = watchdog.makeProbe(name: "demo-\(kind.rawValue)-loop")
        try watchdog.start()

        let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(lock, nil)
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, SocketType.stream, 0, &pair) == 0 else {
            throw ValidationError("socketpair failed: \(String(cString: strerror(errno)))")
        }
        if kind == .lock { pthread_mutex_lock(lock) }
        let stall = stallSeconds
        let readEnd = pair[0]
        // The loop thread borrows the mutex for the demo's whole life; an address is Sendable.
        let lockAddress = UInt(bitPattern: lock)
        let loop = Thread {
            guard let lock = UnsafeMutablePointer<pthread_mutex_t>(bitPattern: lockAddress) else { return }
            _ = sw_thread_set_name("demo-loop") // Foundation does not name the kernel thread on Linux
            // A few healthy iterations, one stalling one, then healthy again.
            for i in 0..<Int.max {
                if kind == .healthy {
                    // Busy nearly all the time, in batches well under the threshold.
                    probe.busy()
                    demoHealthyBatch()
                    probe.idle()
                    usleep(1_000)
                    if Thread.current.isCancelled { break }
                    continue
                }
                probe.busy()
                if i == 5 { kind.work(seconds: stall, lock: lock, socket: readEnd) } else { demoShortRequest() }
                probe.idle()
                usleep(5_000)
                if Thread.current.isCancelled { break }
            }
        }
        loop.name = "demo-loop"
        loop.start()
        // The lock holder and the upstream release their victims after the stall.
        demoSleep(seconds: 0.1 + stall)
        if kind == .lock { pthread_mutex_unlock(lock) }
        if kind == .socket { _ = write(pair[1], "x", 1) }
        demoSleep(seconds: max(seconds - 0.1 - stall, 0.2))
        loop.cancel()
        watchdog.stop()
    }

    /// A pool scenario: nothing runs on the pool before the stall, so its job is the process's first.
    private func runOnPool(_ pool: DemoPoolScenario, watchdog: Watchdog) throws {
        if pool.pingsPool { watchdog.monitor(PingProbe.cooperativePool()) }
        try watchdog.start()
        let delay = Double(max(poolDelayMilliseconds, 0)) / 1000
        demoSleep(seconds: delay)
        pool.start(seconds: stallSeconds)
        demoSleep(seconds: max(seconds - delay, 0.2))
        watchdog.stop()
    }

    static func describe(_ event: WatchdogEvent, encoder: JSONEncoder, full: Bool) -> String {
        if full, event.kind == .stall || event.kind == .cpu, let report = event.report,
           let data = try? encoder.encode(report) {
            return String(decoding: data, as: UTF8.self)
        }
        return event.jsonLine
    }
}
