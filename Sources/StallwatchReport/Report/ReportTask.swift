/// The Swift task a stalled pool job ran, read by the signal handler on the stalled thread while
/// the task was running there (in the watchdog's captures and a sampling ring's first sample; the
/// other periodic samples leave it out, as it would double their cost).
///
/// The name a task was given with `Task(name:)` is not in it: the runtime reads a name under the
/// task's status lock, which a signal handler may not take.
public struct ReportTask: Equatable, Sendable, Codable {
    /// The runtime's id of the task: the number a debugger shows for it.
    public var id: UInt64
    /// The task's priority when it was sampled, as `TaskPriority.rawValue` (25 high, 21 medium,
    /// 17 low, 9 background); escalation shows here.
    public var priority: UInt8
    /// How many of the report's samples read this task: a sampling ring reads it in its first
    /// sample only, the watchdog's own captures in each, so this is not how long the task ran.
    public var sampleCount: Int

    /// A task as sampled.
    public init(id: UInt64, priority: UInt8, sampleCount: Int) {
        self.id = id
        self.priority = priority
        self.sampleCount = sampleCount
    }

    /// The priority's name as Swift spells it (`high`, `medium`, `low`, `background`; the same
    /// values as `userInitiated`, `utility` and the rest), or its raw value.
    public var priorityName: String {
        switch priority {
        case 25: return "high"
        case 21: return "medium"
        case 17: return "low"
        case 9: return "background"
        default: return "\(priority)"
        }
    }
}
