/// The ordered function keys of a blamed path (root→leaf): two stalls with equal signatures are
/// "the same stack" for annealing, whatever the exact PCs were.
public struct StackSignature: Hashable, Sendable, Codable {
    /// Function keys, root first.
    public var frames: [FrameKey]

    /// A signature from root-first function keys.
    public init(rootFirst frames: [FrameKey]) {
        self.frames = frames
    }

    /// The signature of a call tree's heaviest path.
    public init(heaviestPathOf tree: CallTree) {
        self.frames = tree.heaviestPath().map(\.frame)
    }

    /// A signature of one sample (leaf-first frames, as captured).
    public init(sample: StackSample) {
        self.frames = sample.frames.reversed()
    }

    /// Number of frames in the blamed path.
    public var depth: Int { frames.count }
}
