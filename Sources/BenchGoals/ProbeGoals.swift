/// The figures `bench probe` judges its goals on; `nil` means the run did not measure it
/// (e.g. `--idle-seconds 0` skips the idle watchdog and the memory figure).
package struct ProbeFigures: Sendable, Equatable, Codable {
    /// A heartbeat `busy()` + `idle()` pair, median over the rounds, ns.
    package var pairNanoseconds: Double?
    /// The idle watchdog in its default configuration (pool jobs watched), median over its rounds, % of a core.
    package var idleWatchdogPercentOfCore: Double?
    /// Private resident memory (RssAnon) the default configuration adds after one sampled stall, KiB.
    package var addedAnonymousKiB: Int?

    /// Collects the figures; see each property for its meaning and unit.
    package init(pairNanoseconds: Double?, idleWatchdogPercentOfCore: Double?, addedAnonymousKiB: Int?) {
        self.pairNanoseconds = pairNanoseconds
        self.idleWatchdogPercentOfCore = idleWatchdogPercentOfCore
        self.addedAnonymousKiB = addedAnonymousKiB
    }
}

/// `bench probe`'s goals. Pure: the same figures always give the same verdicts.
package enum ProbeGoals {
    /// Goal: a heartbeat pair costs the loop at most this, ns.
    package static let pairNanoseconds = 25.0
    /// Goal: an idle watchdog costs at most this share of a core, %.
    package static let idleWatchdogPercentOfCore = 0.01
    /// Goal: the default configuration adds at most this much private memory, KiB (2 MiB).
    package static let addedAnonymousKiB = 2048.0

    /// The goals' keys, in the order they are printed.
    package static let keys = ["heartbeatPair", "idleWatchdog", "memoryAdded"]

    /// One verdict per goal, keyed as in ``keys``.
    package static func evaluate(_ f: ProbeFigures) -> [String: GoalVerdict] {
        [
            "heartbeatPair": .atMost(f.pairNanoseconds, pairNanoseconds, goal: "≤ \(Int(pairNanoseconds)) ns",
                                     detail: "a heartbeat busy()+idle() pair, median over the rounds"),
            "idleWatchdog": .atMost(f.idleWatchdogPercentOfCore, idleWatchdogPercentOfCore, goal: "≤ \(idleWatchdogPercentOfCore) % of a core",
                                    detail: "the watchdog thread's CPU clock, default configuration (pool jobs watched), one idle loop, median of its rounds"),
            "memoryAdded": .atMost(f.addedAnonymousKiB.map(Double.init), addedAnonymousKiB, goal: "≤ \(Int(addedAnonymousKiB)) KiB RssAnon",
                                   detail: "private resident memory added by the default configuration after one sampled stall (shared code pages apart)"),
        ]
    }
}
