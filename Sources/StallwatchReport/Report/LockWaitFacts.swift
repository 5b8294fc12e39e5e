/// What kind of lock a blocked thread waits on, as told from its futex call and the lock's memory.
///
/// A struct with static members rather than an enum, so that a release can add a kind without
/// breaking a consumer's `switch` (keep a `default:` branch). Coded as its ``rawValue`` string.
public struct LockPrimitive: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The stable name, as in reports (`pthreadMutex`).
    public let rawValue: String
    /// A kind from its name; names unknown to this version are kept as they are.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A glibc `pthread_mutex_t` (normal, recursive, error-checking, robust), Foundation's
    /// `NSLock`/`NSRecursiveLock` included: glibc records the holder's thread id beside the lock word.
    public static let pthreadMutex = LockPrimitive(rawValue: "pthreadMutex")
    /// A priority-inheritance futex: the lock word is the holder's thread id (Swift's
    /// `Synchronization.Mutex` on Linux, a PI `pthread_mutex_t`, libdispatch's unfair lock).
    public static let ownerInWord = LockPrimitive(rawValue: "ownerInWord")
    /// A futex word that counts or sequences rather than locks (a semaphore such as
    /// `DispatchSemaphore`, a condition variable): it has no owner.
    public static let counter = LockPrimitive(rawValue: "counter")
    /// Not recognised.
    public static let unknown = LockPrimitive(rawValue: "unknown")

    public var description: String { rawValue }
}

/// Whether a lock's holder could be named.
///
/// A struct with static members rather than an enum (see ``LockPrimitive``).
public struct LockOwnership: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The stable name, as in reports (`held`).
    public let rawValue: String
    /// An ownership from its name; names unknown to this version are kept as they are.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Held by a named thread of this process.
    public static let held = LockOwnership(rawValue: "held")
    /// The primitive records no owner (a semaphore, a condition variable): nobody is named.
    public static let noOwner = LockOwnership(rawValue: "noOwner")
    /// An owner may exist but could not be told (a read failed, the lock changed hands, the named
    /// thread is not one of this process's); ``LockWaitFacts/summary`` says which.
    public static let notKnown = LockOwnership(rawValue: "notKnown")

    public var description: String { rawValue }
}

/// One hop of a chain of lock waits: `waiter` waits on the lock at `lockAddress`, which `holder` holds.
public struct LockWaitLink: Sendable, Equatable, Codable {
    /// The waiting thread.
    public var waiter: ThreadIdentity
    /// The futex word it waits on.
    public var lockAddress: ReportAddress
    /// How the holder was told.
    public var primitive: LockPrimitive
    /// The holder: its identity, state, system call and stack, captured in the same round.
    public var holder: ThreadStack

    /// Creates a hop.
    public init(waiter: ThreadIdentity, lockAddress: UInt64, primitive: LockPrimitive, holder: ThreadStack) {
        self.waiter = waiter
        self.lockAddress = ReportAddress(lockAddress)
        self.primitive = primitive
        self.holder = holder
    }
}

/// What a stalled thread blocked on a lock waits for: the lock, who holds it (when the lock records
/// it), what the holder was doing at the same round, and whether the waits close into a deadlock.
public struct LockWaitFacts: Sendable, Equatable, Codable {
    /// The futex word the stalled thread waits on.
    public var lockAddress: ReportAddress
    /// What kind of lock it is.
    public var primitive: LockPrimitive
    /// Whether the holder was named.
    public var ownership: LockOwnership
    /// The holder, with its stack, when ``ownership`` is ``LockOwnership/held``.
    public var holder: ThreadStack?
    /// Whether the lock word held the same value at a second read after the holder was checked to
    /// be a thread of this process; `false` means it changed hands meanwhile (the holder named is the
    /// one first read); absent when no holder was read.
    public var ownerStable: Bool?
    /// The sentence: "waiting on a lock held by thread T (name), which is in …", "no owner: …", or why
    /// the holder is not known.
    public var summary: String
    /// The waits from the stalled thread on, when a holder waits on a lock itself: each hop with its
    /// holder's stack (the first hop's holder is ``holder``). Absent for a single hop.
    public var chain: [LockWaitLink]?
    /// `true` when the chain comes back to the stalled thread: a deadlock, whose every thread's stack
    /// is in ``chain``.
    public var deadlock: Bool

    /// Creates the facts of one lock wait.
    public init(lockAddress: UInt64, primitive: LockPrimitive, ownership: LockOwnership, holder: ThreadStack? = nil,
                ownerStable: Bool? = nil, summary: String, chain: [LockWaitLink]? = nil, deadlock: Bool = false) {
        self.lockAddress = ReportAddress(lockAddress)
        self.primitive = primitive
        self.ownership = ownership
        self.holder = holder
        self.ownerStable = ownerStable
        self.summary = summary
        self.chain = chain
        self.deadlock = deadlock
    }
}
