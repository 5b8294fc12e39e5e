import CSampler

/// Why a stack walk ended: at the thread's first frame (the stack is whole), or early, and why.
///
/// A struct with static members rather than an enum, so that a new reason is not a source break
/// for a `switch` in a user's code: compare with `==`, or read ``name``.
package struct StackEnd: Hashable, Sendable, Codable, CustomStringConvertible {
    /// A short stable name, as it appears in reports and metrics (`root`, `frameLimit`, …).
    package let name: String

    /// Creates a value from its name (for decoding and tests).
    package init(name: String) {
        self.name = name
    }

    /// Walked to the thread's first frame: nothing is missing.
    package static let root = StackEnd(name: "root")
    /// Stopped at the frame limit (`maxFrames`): the outermost frames are missing.
    package static let frameLimit = StackEnd(name: "frameLimit")
    /// A frame record or an unwind-table row led to no valid frame (a register in other use, a
    /// corrupt stack): the frames beyond it are missing.
    package static let badLink = StackEnd(name: "badLink")
    /// Code with neither a frame record nor an unwind-table entry (generated code, a stripped
    /// object): the frames beyond it are missing.
    package static let noUnwindInfo = StackEnd(name: "noUnwindInfo")
    /// The next frame lay outside the readable stack (or the copy taken of it).
    package static let unreadable = StackEnd(name: "unreadable")
    /// The thread's stack was not known: only the program counter was taken.
    package static let stackUnknown = StackEnd(name: "stackUnknown")
    /// The unwind ran out of time.
    package static let timedOut = StackEnd(name: "timedOut")
    /// More frames needed unwind tables than the signal handler may spend time on.
    package static let budget = StackEnd(name: "budget")
    /// No walk was made (the bare program counter was asked for).
    package static let notWalked = StackEnd(name: "notWalked")

    /// `true` only for ``root``: every other end leaves frames out.
    package var isWhole: Bool { self == .root }

    package var description: String { name }

    init(c: UInt8) {
        switch Int(c) {
        case Int(SW_STOP_ROOT): self = .root
        case Int(SW_STOP_FRAME_LIMIT): self = .frameLimit
        case Int(SW_STOP_BAD_LINK): self = .badLink
        case Int(SW_STOP_NO_UNWIND_INFO): self = .noUnwindInfo
        case Int(SW_STOP_UNREADABLE): self = .unreadable
        case Int(SW_STOP_STACK_UNKNOWN): self = .stackUnknown
        case Int(SW_STOP_TIMED_OUT): self = .timedOut
        case Int(SW_STOP_BUDGET): self = .budget
        case Int(SW_STOP_NOT_WALKED): self = .notWalked
        default: self = StackEnd(name: "unknown(\(c))")
        }
    }
}
