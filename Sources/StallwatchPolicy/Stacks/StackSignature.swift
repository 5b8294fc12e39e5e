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

extension StackSignature {
    /// Whether two blamed paths describe the same stall: equal once the leaf-most frame of each is
    /// ignored, i.e. one path minus its leaf is a prefix of the other. A CPU-bound loop's leaf hops
    /// between the helpers it calls (an iterator's `next`, a hash function) while the stall stays
    /// the same; a different caller anywhere above the leaf is a different stall.
    public func isSameStall(as other: StackSignature) -> Bool {
        let (short, long) = frames.count <= other.frames.count ? (frames, other.frames) : (other.frames, frames)
        let stem = short.dropLast()
        return long.starts(with: stem) && (stem.count > 0 || short.count == long.count)
    }
}
