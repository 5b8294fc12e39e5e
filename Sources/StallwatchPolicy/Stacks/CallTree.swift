import StallwatchReport
/// Samples aggregated root→leaf by function: each node counts the samples whose stack passes
/// through that call path. This is what lets Stallwatch blame where the thread *spent* the
/// stall rather than where one late snapshot happened to land (matrix issue #622).
package struct CallTree: Sendable, Equatable {
    /// One call path prefix.
    package struct Node: Sendable, Equatable {
        /// The function at this depth.
        package var frame: FrameKey
        /// Samples whose stack passes through this node.
        package var count: Int
        /// Samples whose stack ends exactly here (this function was the leaf).
        package var selfCount: Int
        /// Index (in the input order) of the newest sample through this node; breaks ties.
        package var lastSampleIndex: Int
        /// Callees, heaviest first (ties: most recently sampled first).
        package var children: [Node]
    }

    /// A step of ``heaviestPath()``: a function and the samples that reached it on this path.
    package struct WeightedFrame: Sendable, Equatable, Hashable {
        /// The function.
        package var frame: FrameKey
        /// Samples through this path prefix.
        package var count: Int

        /// Creates a step.
        package init(frame: FrameKey, count: Int) {
            self.frame = frame
            self.count = count
        }
    }

    /// Top-level functions, heaviest first.
    package private(set) var roots: [Node]
    /// Samples that contributed (empty samples are skipped).
    package private(set) var sampleCount: Int
    /// For each function, the samples in which it was the leaf.
    package private(set) var selfCounts: [FrameKey: Int]

    /// Builds the tree from samples in capture order (oldest first).
    package init(samples: [StackSample]) {
        var builder = Builder()
        for (index, sample) in samples.enumerated() where !sample.frames.isEmpty {
            builder.add(sample, index: index)
        }
        roots = builder.finish()
        sampleCount = builder.sampleCount
        selfCounts = builder.selfCounts
    }

    /// The blamed path, root→leaf: from the top, always follow the child with the most samples;
    /// on a tie, the child seen in the most recent sample. Empty when there are no samples.
    package func heaviestPath() -> [WeightedFrame] {
        var path: [WeightedFrame] = []
        var level = roots
        // Children are already sorted heaviest-then-newest, so the first is the pick.
        while let next = level.first {
            path.append(WeightedFrame(frame: next.frame, count: next.count))
            level = next.children
        }
        return path
    }
}
