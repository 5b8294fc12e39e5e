import CSampler

/// A kernel thread id (what `gettid()` returns) of a thread in this process.
///
/// Thread ids are reused after a thread exits, so an id is only meaningful while its thread lives;
/// every read through it can fail once the thread has exited.
public struct ThreadID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The kernel's id for the thread.
    public let rawValue: Int32

    /// Wraps a kernel thread id.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The id of the calling thread.
    public static var current: ThreadID {
        ThreadID(rawValue: sw_gettid())
    }

    /// The decimal id, as `ps -L` and `/proc` show it.
    public var description: String {
        String(rawValue)
    }

    /// Encodes as a bare number, so reports read naturally.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(Int32.self)
    }

    /// Encodes as a bare number, so reports read naturally.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
