/// The category of a stall's cause.
public enum StallCauseKind: String, Sendable, Codable, Equatable, CaseIterable {
    /// The thread is computing: running, and its CPU time grows with wall time.
    case cpuBound
    /// Waiting on a lock (`futex`).
    case lockWait
    /// Waiting on the network (socket I/O, or a poll/select/epoll readiness wait).
    case networkIO
    /// Waiting on storage (state `D`, or file I/O and syncs).
    case diskIO
    /// Sleeping on purpose (`nanosleep`, `clock_nanosleep`).
    case sleeping
    /// Runnable but not getting a CPU.
    case starved
    /// Runnable but starved of CPU while the process has more runnable threads than cores.
    case tooManyThreads
    /// Blocked in a syscall the classifier has no better name for.
    case blockedInSyscall
    /// The evidence does not say.
    case unknown
    /// A CPU event rather than a stall (process CPU high or sustained high).
    case cpuUsage
}

/// Why a thread stalled, with the evidence in words. Coded flat (`kind`, `evidence`, and the
/// optional `syscall`, `syscallName`, `threadCount`) so that JSON consumers need no Swift enum
/// conventions.
public struct StallCause: Sendable, Codable, Equatable {
    /// The category.
    public var kind: StallCauseKind
    /// A sentence saying why this category was chosen.
    public var evidence: String
    /// The syscall number involved, if any.
    public var syscall: Int?
    /// The syscall's name when known.
    public var syscallName: String?
    /// The thread count, for ``StallCauseKind/tooManyThreads``.
    public var threadCount: Int?

    /// Creates a cause.
    public init(kind: StallCauseKind, evidence: String, syscall: Int? = nil, threadCount: Int? = nil) {
        self.kind = kind
        self.evidence = evidence
        self.syscall = syscall
        self.syscallName = syscall.flatMap(SyscallNumber.name(of:))
        self.threadCount = threadCount
    }
}
