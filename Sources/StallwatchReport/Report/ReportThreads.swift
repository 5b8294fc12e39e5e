/// A thread's identity.
public struct ThreadIdentity: Sendable, Equatable, Codable {
    /// Kernel thread id (`gettid()`).
    public var id: Int32
    /// Thread name (`comm`, at most 15 bytes on Linux).
    public var name: String

    /// Creates an identity.
    public init(id: Int32, name: String) {
        self.id = id
        self.name = name
    }
}

/// Another thread's state and stack at the stall.
public struct ThreadStack: Sendable, Equatable, Codable {
    /// Which thread.
    public var thread: ThreadIdentity
    /// `/proc` state letter as a one-character string.
    public var state: String
    /// Syscall it was blocked in, if any.
    public var syscall: Int?
    /// Its stack, leaf first.
    public var frames: [ReportFrame]
    /// How long before the report was made its stack was taken, when the stack is the newest sample
    /// of a watched loop's thread that is itself stalled (busy since before that sample, and still
    /// busy) rather than a capture made for this report; `nil` for a capture made for the report.
    /// Such a thread runs the same stalled work the sample shows, and no signal had to wait for it.
    public var stackAgeNanoseconds: UInt64?

    /// Creates a thread stack captured for the report.
    public init(thread: ThreadIdentity, state: String, syscall: Int? = nil, frames: [ReportFrame]) {
        self.init(thread: thread, state: state, syscall: syscall, frames: frames, stackAgeNanoseconds: nil)
    }

    /// Creates a thread stack; `stackAgeNanoseconds` as ``stackAgeNanoseconds``.
    public init(thread: ThreadIdentity, state: String, syscall: Int? = nil, frames: [ReportFrame],
                stackAgeNanoseconds: UInt64?) {
        self.thread = thread
        self.state = state
        self.syscall = syscall
        self.frames = frames
        self.stackAgeNanoseconds = stackAgeNanoseconds
    }
}

/// A thread's CPU usage over the report's window.
public struct ThreadCPUUsage: Sendable, Equatable, Codable {
    /// Which thread.
    public var thread: ThreadIdentity
    /// CPU time ÷ wall time × 100 (100 = one full core).
    public var cpuPercent: Double

    /// Creates a usage entry.
    public init(thread: ThreadIdentity, cpuPercent: Double) {
        self.thread = thread
        self.cpuPercent = cpuPercent
    }
}
