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
