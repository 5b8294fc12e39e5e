import CSampler

/// How a stack's async call chain ended: the callers of a Swift async function that resumed after
/// an `await`, read from its task's chain of async contexts (see ``CapturedStack/asyncFrames``).
///
/// A struct with static members rather than an enum, so that a new reason is not a source break.
package struct AsyncChainEnd: Hashable, Sendable, Codable, CustomStringConvertible {
    /// A short stable name, as it appears in reports (`whole`, `unreadable`, …).
    package let name: String

    /// Creates a value from its name (for decoding and tests).
    package init(name: String) {
        self.name = name
    }

    /// Followed to the task's first function: no async caller is missing.
    package static let whole = AsyncChainEnd(name: "whole")
    /// A context lay outside every readable mapping known: the callers beyond it are missing.
    package static let unreadable = AsyncChainEnd(name: "asyncContextUnreadable")
    /// A context's resume function was not code: the chain was not followed further.
    package static let badResume = AsyncChainEnd(name: "asyncResumeNotCode")
    /// The chain was longer than the walk may follow (or the stack's frame limit was reached).
    package static let limit = AsyncChainEnd(name: "asyncChainLimit")

    /// `true` only for ``whole``.
    package var isWhole: Bool { self == .whole }

    package var description: String { name }

    /// `nil` for `SW_ASYNC_NONE` (the walk met no async function).
    init?(c: UInt8) {
        switch Int32(c) {
        case Int32(SW_ASYNC_NONE): return nil
        case Int32(SW_ASYNC_WHOLE): self = .whole
        case Int32(SW_ASYNC_UNREADABLE): self = .unreadable
        case Int32(SW_ASYNC_BAD_RESUME): self = .badResume
        case Int32(SW_ASYNC_LIMIT): self = .limit
        default: self = AsyncChainEnd(name: "unknown(\(c))")
        }
    }
}
