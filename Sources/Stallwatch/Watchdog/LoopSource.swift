import StallwatchPolicy
import StallwatchReport

/// A monitored loop, whichever probe watches it.
enum LoopSource: Sendable {
    case heartbeat(HeartbeatProbe)
    case ping(PingProbe)

    var name: String {
        switch self {
        case .heartbeat(let p): p.name
        case .ping(let p): p.name
        }
    }

    var busySince: MonotonicInstant? {
        switch self {
        case .heartbeat(let p): p.busySince
        case .ping(let p): p.busySince
        }
    }

    /// When the busy period that began at `since` ended, if the probe knows it.
    func end(ofPeriodSince since: MonotonicInstant) -> MonotonicInstant? {
        switch self {
        case .heartbeat(let p): p.end(ofPeriodSince: since)
        case .ping(let p): p.end(ofPeriodSince: since)
        }
    }

    /// The last busy period the probe saw end, for a stall that began and ended between two
    /// rounds: a heartbeat's, or the newest long tick of a loop that reports its ticks. Other
    /// pings know a period only by the ping that waited in it: `nil`.
    var lastEndedPeriod: (since: MonotonicInstant, end: MonotonicInstant)? {
        switch self {
        case .heartbeat(let p): p.lastEndedPeriod
        case .ping(let p): p.lastEndedPeriod
        }
    }

    /// Whether the loop reports its own ticks (a NIO loop with a tick timer).
    var reportsTicks: Bool {
        if case .ping(let p) = self { return p.isReportingTicks }
        return false
    }

    var thread: ThreadID? {
        switch self {
        case .heartbeat(let p): p.thread
        case .ping(let p): p.thread
        }
    }

    var identity: ObjectIdentifier {
        switch self {
        case .heartbeat(let p): ObjectIdentifier(p)
        case .ping(let p): ObjectIdentifier(p)
        }
    }
}
