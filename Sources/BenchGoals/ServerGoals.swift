/// The figures `bench server` judges its goals on; `nil` means the run did not measure it.
package struct ServerFigures: Sendable, Equatable, Codable {
    /// The watchdog thread's CPU under wrk, median over the rounds with the watchdog on, % of a core.
    package var watchdogPercentOfCoreUnderLoad: Double?
    /// Idle event-loop wake-ups the watchdog adds, per loop per second (on minus off, medians).
    package var idleLoopWakeupsAddedPerLoop: Double?
    /// Stall events the server printed with the watchdog on, every run together.
    package var stallsReportedUnderLoad: Int?
    /// Idle cooperative-pool wake-ups the watchdog adds, all pool threads together, per second
    /// (on minus off, medians).
    package var idlePoolWakeupsAdded: Double?

    /// Collects the figures; see each property for its meaning and unit.
    package init(watchdogPercentOfCoreUnderLoad: Double?, idleLoopWakeupsAddedPerLoop: Double?, stallsReportedUnderLoad: Int?,
                 idlePoolWakeupsAdded: Double? = nil) {
        self.watchdogPercentOfCoreUnderLoad = watchdogPercentOfCoreUnderLoad
        self.idleLoopWakeupsAddedPerLoop = idleLoopWakeupsAddedPerLoop
        self.stallsReportedUnderLoad = stallsReportedUnderLoad
        self.idlePoolWakeupsAdded = idlePoolWakeupsAdded
    }
}

/// `bench server`'s goals. Pure: the same figures always give the same verdicts.
package enum ServerGoals {
    /// Goal: the watchdog thread costs at most this share of a core under load, %.
    package static let watchdogPercentOfCore = 0.01
    /// Goal: the watchdog adds at most this many idle event-loop wake-ups per loop per second
    /// (none by design; the margin is the measurement's noise).
    package static let idleWakeupsPerLoop = 0.5
    /// Goal: the watchdog adds at most this many idle wake-ups per second to the cooperative pool's
    /// threads, all together (none by design: the pool is looked at, not pinged, while idle).
    package static let idlePoolWakeups = 0.5

    /// The goals' keys, in the order they are printed.
    package static let keys = ["watchdogCPUUnderLoad", "idleLoopWakeups", "idlePoolWakeups", "noStallUnderLoad"]

    /// One verdict per goal, keyed as in ``keys``.
    package static func evaluate(_ f: ServerFigures) -> [String: GoalVerdict] {
        [
            "watchdogCPUUnderLoad": .atMost(f.watchdogPercentOfCoreUnderLoad, watchdogPercentOfCore, goal: "≤ \(watchdogPercentOfCore) % of a core",
                                            detail: "the watchdog thread's CPU (schedstat) under wrk, median of the rounds with the watchdog on"),
            "idleLoopWakeups": .atMost(f.idleLoopWakeupsAddedPerLoop, idleWakeupsPerLoop, goal: "≤ \(idleWakeupsPerLoop)/s per loop",
                                       detail: "idle event-loop wake-ups (schedstat timeslices) with the watchdog minus without, per loop"),
            "idlePoolWakeups": .atMost(f.idlePoolWakeupsAdded, idlePoolWakeups, goal: "≤ \(idlePoolWakeups)/s",
                                       detail: "idle cooperative-pool wake-ups (schedstat timeslices of its threads) with the watchdog minus without"),
            "noStallUnderLoad": .atMost(f.stallsReportedUnderLoad.map(Double.init), 0, goal: "0 stalls",
                                        detail: "stall events the server printed with the watchdog on (every request is short)"),
        ]
    }
}
