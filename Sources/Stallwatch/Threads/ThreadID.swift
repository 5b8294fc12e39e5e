import CSampler

/// The kernel id of a thread of this process (what `gettid()` returns).
public struct ThreadID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The kernel thread id.
    public let rawValue: Int32

    /// Wraps a kernel thread id.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread.
    public static var current: ThreadID { ThreadID(rawValue: sw_gettid()) }

    public var description: String { "tid \(rawValue)" }
}
