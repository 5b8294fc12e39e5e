import CSampler
import StallwatchPolicy

/// Storage the watchdog reuses to turn samples into call trees and signatures, every round one has
/// new samples and for every report: kept between rounds and stalls, so that steady work allocates
/// nothing once it has held the largest tree so far. Used on the watchdog thread only.
final class StackScratch {
    /// The tree being built.
    var tree = CallTree(capacity: 256)
    /// Every distinct address looked up while building ``tree``, resolved once.
    var resolved: [UInt: SymbolizedFrame] = [:]
    /// What the report says of each function key of ``tree``, from ``resolved``.
    var frames = FrameTable()
    /// Each sample's leaf node in ``tree`` and when it was taken (CLOCK_MONOTONIC, ns), in the
    /// order they were added.
    var leaves: [(node: Int, takenAt: UInt64?)] = []
    /// One sample's function keys, leaf first.
    var keys: [FrameKey] = []
    /// A dominant path, root first.
    var path: [FrameKey] = []
    /// Frame storage for stacks captured only to be written into a report (other threads').
    var capturedFrames: [UInt] = []

    /// ``capturedFrames``, taken out (its next user hands it back with ``giveBack(_:)``).
    func takeCapturedFrames() -> [UInt] {
        var frames: [UInt] = []
        swap(&frames, &capturedFrames)
        return frames
    }

    /// Keeps a stack's frame storage for the next capture.
    func giveBack(_ stack: inout CapturedStack) {
        swap(&capturedFrames, &stack.frames)
    }

    init() {
        keys.reserveCapacity(256)
        leaves.reserveCapacity(256)
        path.reserveCapacity(256)
        // Room for the deepest walk: other threads' stacks differ in depth, and a smaller buffer
        // would be reallocated by the first deeper one.
        capturedFrames.reserveCapacity(Int(SW_MAX_FRAMES))
    }
}
