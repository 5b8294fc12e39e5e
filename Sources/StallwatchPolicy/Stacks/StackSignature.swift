import StallwatchReport
/// The ordered function keys of a blamed path (root→leaf): two stalls with equal signatures are
/// "the same stack" for annealing, whatever the exact PCs were.
package struct StackSignature: Hashable, Sendable, Codable {
    /// Function keys, root first.
    package var frames: [FrameKey]

    /// A signature from root-first function keys.
    package init(rootFirst frames: [FrameKey]) {
        self.frames = frames
    }

    /// The signature of a call tree's heaviest path.
    package init(heaviestPathOf tree: CallTree) {
        self.frames = tree.heaviestPath().map(\.frame)
    }

    /// A signature of one sample (leaf-first frames, as captured).
    package init(sample: StackSample) {
        self.frames = sample.frames.reversed()
    }

    /// Number of frames in the blamed path.
    package var depth: Int { frames.count }
}

extension StackSignature {
    /// The part of a tree's heaviest path that a majority of samples share: the path is cut where
    /// fewer than half of all samples still follow it. This is what identifies a stall: a CPU-bound
    /// function's samples spread over the helpers it calls (an iterator's `next`, a clock read),
    /// so the leaf of the heaviest path hops from round to round while the stall stays the same;
    /// a different function doing the work is still a different signature.
    package init(dominantPathOf tree: CallTree) {
        var frames: [FrameKey] = []
        tree.dominantPath(into: &frames)
        self.init(rootFirst: frames)
    }
}

extension StackSignature {
    /// Whether two dominant paths describe the same stall: one is a prefix of the other (root
    /// first). When a callee's share of the samples hovers around half, the dominant path gains
    /// and loses that callee from round to round; the stall is the same.
    package func isSameStall(as other: StackSignature) -> Bool {
        let (short, long) = frames.count <= other.frames.count ? (frames, other.frames) : (other.frames, frames)
        return !short.isEmpty && long.starts(with: short)
    }
}
