/// The stacks of a set of threads held still together.
package struct Snapshot: Sendable {
    /// One thread's outcome.
    package struct Entry: Sendable {
        /// The thread.
        package var thread: ThreadID
        /// Its stack, or why there is none.
        package var result: Result<CapturedStack, SamplerError>
    }
    /// One entry per requested thread, in the requested order.
    package var entries: [Entry]
    /// `true` when every signalled thread was still held at release (none resumed on its own
    /// deadline), so the stacks are a consistent picture of one moment.
    package var heldTogether: Bool
    /// How many threads were held in their handlers (threads blocked in system calls are not).
    package var heldCount: Int

    /// The stacks that were captured.
    package var stacks: [CapturedStack] { entries.compactMap { try? $0.result.get() } }
}
