/// The stacks of a set of threads held still together.
public struct Snapshot: Sendable {
    /// One thread's outcome.
    public struct Entry: Sendable {
        /// The thread.
        public var thread: ThreadID
        /// Its stack, or why there is none.
        public var result: Result<CapturedStack, SamplerError>
    }
    /// One entry per requested thread, in the requested order.
    public var entries: [Entry]
    /// `true` when every signalled thread was still held at release (none resumed on its own
    /// deadline), so the stacks are a consistent picture of one moment.
    public var heldTogether: Bool
    /// How many threads were held in their handlers (threads blocked in system calls are not).
    public var heldCount: Int

    /// The stacks that were captured.
    public var stacks: [CapturedStack] { entries.compactMap { try? $0.result.get() } }
}
