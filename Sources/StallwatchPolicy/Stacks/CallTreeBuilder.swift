import StallwatchReport
extension CallTree {
    /// Mutable flat storage used while aggregating; nodes refer to children by index so that
    /// insertion is O(depth) without copying nested arrays.
    struct Builder {
        private struct FlatNode {
            var frame: FrameKey
            var count = 0
            var selfCount = 0
            var lastSampleIndex = 0
            var children: [FrameKey: Int] = [:]
        }

        private var nodes: [FlatNode] = []
        private var rootIndex: [FrameKey: Int] = [:]
        private(set) var sampleCount = 0
        private(set) var selfCounts: [FrameKey: Int] = [:]

        mutating func add(_ sample: StackSample, index: Int) {
            sampleCount += 1
            var parent: Int?
            for frame in sample.frames.reversed() {
                let current = child(of: parent, frame: frame)
                nodes[current].count += 1
                nodes[current].lastSampleIndex = index
                parent = current
            }
            if let leafNode = parent, let leaf = sample.leaf {
                nodes[leafNode].selfCount += 1
                selfCounts[leaf, default: 0] += 1
            }
        }

        private mutating func child(of parent: Int?, frame: FrameKey) -> Int {
            let existing = parent.map { nodes[$0].children[frame] } ?? rootIndex[frame]
            if let existing { return existing }
            nodes.append(FlatNode(frame: frame))
            let created = nodes.count - 1
            if let parent {
                nodes[parent].children[frame] = created
            } else {
                rootIndex[frame] = created
            }
            return created
        }

        func finish() -> [Node] {
            sorted(rootIndex.values.map(node(at:)))
        }

        private func node(at index: Int) -> Node {
            let flat = nodes[index]
            return Node(
                frame: flat.frame, count: flat.count, selfCount: flat.selfCount,
                lastSampleIndex: flat.lastSampleIndex,
                children: sorted(flat.children.values.map(node(at:))))
        }

        private func sorted(_ level: [Node]) -> [Node] {
            level.sorted { a, b in
                a.count != b.count ? a.count > b.count : a.lastSampleIndex > b.lastSampleIndex
            }
        }
    }
}
