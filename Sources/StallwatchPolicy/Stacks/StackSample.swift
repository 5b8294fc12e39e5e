/// One captured stack of the watched thread.
public struct StackSample: Hashable, Sendable, Codable {
    /// Frames leaf first: `frames[0]` is the innermost function, `frames.last` the root.
    public var frames: [FrameKey]

    /// Creates a sample from leaf-first frames.
    public init(frames: [FrameKey]) {
        self.frames = frames
    }

    /// The innermost frame, if any.
    public var leaf: FrameKey? { frames.first }
}
