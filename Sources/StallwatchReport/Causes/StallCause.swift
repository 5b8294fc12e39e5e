/// The category of a stall's cause.
///
/// A struct with static members rather than an enum, so that a release can add a category without
/// breaking a consumer's `switch` (keep a `default:` branch). Coded as its ``rawValue`` string.
public struct StallCauseKind: RawRepresentable, Hashable, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// The stable name, as in reports, metrics labels and logs (`cpuBound`).
    public let rawValue: String
    /// A kind from its name; names unknown to this version are kept as they are.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The thread is computing: running, and its CPU time grows with wall time.
    public static let cpuBound = StallCauseKind(rawValue: "cpuBound")
    /// Waiting on a lock (`futex`).
    public static let lockWait = StallCauseKind(rawValue: "lockWait")
    /// Waiting on a lock whose holder waits, directly or through other threads, on a lock the
    /// stalled thread holds: no thread of the cycle can go on (see ``StallReport/lockWait``).
    public static let deadlock = StallCauseKind(rawValue: "deadlock")
    /// Waiting on the network (socket I/O, or a poll/select/epoll readiness wait).
    public static let networkIO = StallCauseKind(rawValue: "networkIO")
    /// Waiting on storage (state `D`, or file I/O and syncs).
    public static let diskIO = StallCauseKind(rawValue: "diskIO")
    /// Sleeping on purpose (`nanosleep`, `clock_nanosleep`).
    public static let sleeping = StallCauseKind(rawValue: "sleeping")
    /// Runnable but not getting a CPU.
    public static let starved = StallCauseKind(rawValue: "starved")
    /// Runnable but starved of CPU while the process has more runnable threads than cores.
    public static let tooManyThreads = StallCauseKind(rawValue: "tooManyThreads")
    /// Blocked in a syscall the classifier has no better name for.
    public static let blockedInSyscall = StallCauseKind(rawValue: "blockedInSyscall")
    /// The evidence does not say.
    public static let unknown = StallCauseKind(rawValue: "unknown")
    /// A CPU event rather than a stall (process CPU high or sustained high).
    public static let cpuUsage = StallCauseKind(rawValue: "cpuUsage")

    /// Every kind this version knows.
    public static let allCases: [StallCauseKind] = [
        .cpuBound, .lockWait, .deadlock, .networkIO, .diskIO, .sleeping, .starved, .tooManyThreads, .blockedInSyscall,
        .unknown, .cpuUsage,
    ]

    public var description: String { rawValue }
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
