import StallwatchReport
/// One captured stack of the watched thread.
package struct StackSample: Hashable, Sendable, Codable {
    /// Frames leaf first: `frames[0]` is the innermost function, `frames.last` the root.
    package var frames: [FrameKey]

    /// Creates a sample from leaf-first frames.
    package init(frames: [FrameKey]) {
        self.frames = frames
    }

    /// The innermost frame, if any.
    package var leaf: FrameKey? { frames.first }
}
