/// A job that held a worker of the Swift concurrency pool when the pool's own ping stalled: what a
/// `cooperative-pool` report lists, so that a starved pool (every worker blocked, the classic pool
/// deadlock) is read in one report, each blocked job with its stack and cause.
public struct PoolJobStack: Sendable, Equatable, Codable {
    /// The worker the job ran on.
    public var thread: ThreadIdentity
    /// When the job began (Unix epoch nanoseconds, wall clock), as its own report dates it.
    public var startTimeUnixNanoseconds: Int64?
    /// The id of the job's own `cooperative-pool-job` report, when it was reported (a job still
    /// under the threshold has none yet).
    public var reportID: String?
    /// Why the job holds its worker, with evidence; absent when not read yet.
    public var cause: StallCause?
    /// The job's stack, leaf first: its report's blamed stack, else its newest sample.
    public var frames: [ReportFrame]

    /// Creates an entry.
    public init(thread: ThreadIdentity, startTimeUnixNanoseconds: Int64? = nil, reportID: String? = nil,
                cause: StallCause? = nil, frames: [ReportFrame]) {
        self.thread = thread
        self.startTimeUnixNanoseconds = startTimeUnixNanoseconds
        self.reportID = reportID
        self.cause = cause
        self.frames = frames
    }
}
