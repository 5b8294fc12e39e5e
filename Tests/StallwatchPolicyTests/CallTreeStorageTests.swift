import StallwatchPolicy
import StallwatchReport
import Testing

/// The reusable flat tree must give exactly what the nested aggregation it replaced gave (kept
/// below as ``NestedTree``): the reports' JSON depends on it.
@Suite struct CallTreeStorageTests {
    private func store(_ samples: [StackSample], into store: inout CallTree) {
        store.removeAll()
        for (i, s) in samples.enumerated() { store.add(leafFirst: s.frames, index: i) }
    }

    private func nodes(_ store: inout CallTree) -> [ReportCallTreeNode] {
        ReportCallTreeNode.flatten(&store, frames: FrameTable())
    }

    /// Deterministic pseudo-random stacks: a few shared roots, branching, recursion, empty samples.
    private func randomSamples(seed: UInt64, count: Int) -> [StackSample] {
        var state = seed
        func next(_ bound: UInt64) -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return (state >> 33) % bound
        }
        return (0..<count).map { _ in
            let depth = Int(next(9))
            return StackSample(frames: (0..<depth).map { _ in FrameKey(address: 1 + next(4)) })
        }
    }

    @Test func matchesCallTreeOnRandomSamples() {
        var reused = CallTree()
        for seed in 1...200 as ClosedRange<UInt64> {
            let samples = randomSamples(seed: seed, count: Int(seed % 40))
            let tree = NestedTree(samples: samples)
            store(samples, into: &reused)
            #expect(reused.sampleCount == tree.sampleCount)
            var path: [CallTree.WeightedFrame] = []
            reused.forEachOnHeaviestPath { path.append(.init(frame: $0, count: $1)); return true }
            #expect(path == tree.heaviestPath(), "seed \(seed)")
            #expect(reused.heaviestPath() == tree.heaviestPath(), "seed \(seed)")
            var dominant: [FrameKey] = [99]
            reused.dominantPath(into: &dominant)
            #expect(dominant == tree.dominantPath(), "seed \(seed)")
            #expect(StackSignature(dominantPathOf: reused).frames == tree.dominantPath(), "seed \(seed)")
            #expect(nodes(&reused) == tree.flatten(), "seed \(seed)")
            #expect(ReportFrame.blamedStack(of: reused, frames: FrameTable())
                    == tree.heaviestPath().reversed().map { ReportFrame(address: $0.frame.address, sampleCount: $0.count) },
                    "seed \(seed)")
        }
    }

    @Test func countsAndOrderOfAKnownTree() {
        var s = CallTree()
        store([sample(1, 2, 3), sample(1, 2, 3), sample(1, 2, 4), sample(1, 5)], into: &s)
        let flat = nodes(&s)
        // Root 1, then its heaviest child 2 with 3 (2 samples) before 4, then 5.
        #expect(flat.map(\.address.value) == [1, 2, 3, 4, 5])
        #expect(flat.map(\.parent) == [-1, 0, 1, 1, 0])
        #expect(flat.map(\.count) == [4, 3, 2, 1, 1])
        #expect(flat.map(\.selfCount) == [0, 0, 2, 1, 1])
    }

    @Test func emptyAfterRemoveAll() {
        var s = CallTree()
        store([sample(1, 2)], into: &s)
        s.removeAll()
        #expect(s.sampleCount == 0)
        #expect(s.nodeCount == 0)
        var path: [FrameKey] = [7]
        s.dominantPath(into: &path)
        #expect(path.isEmpty)
        #expect(nodes(&s).isEmpty)
    }

    @Test func addingAfterAWalkResorts() {
        var s = CallTree()
        s.add(leafFirst: [2, 1], index: 0)
        s.add(leafFirst: [3, 1], index: 1)
        #expect(nodes(&s).map(\.address.value) == [1, 3, 2])
        s.add(leafFirst: [2, 1], index: 2)
        #expect(nodes(&s).map(\.address.value) == [1, 2, 3])
    }
}

/// The aggregation the flat tree replaced, nested and sorted once: each node's children sorted
/// heaviest first, then the most recently sampled. The reference the flat tree is held to.
private struct NestedTree {
    struct Node {
        var frame: FrameKey
        var count = 0
        var selfCount = 0
        var lastSampleIndex = 0
        var children: [Node] = []
    }

    var roots: [Node] = []
    var sampleCount = 0

    init(samples: [StackSample]) {
        for (index, sample) in samples.enumerated() where !sample.frames.isEmpty {
            sampleCount += 1
            Self.add(sample.frames.reversed()[...], index: index, into: &roots)
        }
        roots = Self.sorted(roots)
    }

    private static func add(_ rootFirst: ArraySlice<FrameKey>, index: Int, into level: inout [Node]) {
        guard let frame = rootFirst.first else { return }
        let at = level.firstIndex { $0.frame == frame } ?? {
            level.append(Node(frame: frame))
            return level.count - 1
        }()
        level[at].count += 1
        level[at].lastSampleIndex = index
        if rootFirst.count == 1 { level[at].selfCount += 1 }
        add(rootFirst.dropFirst(), index: index, into: &level[at].children)
    }

    private static func sorted(_ level: [Node]) -> [Node] {
        level.map { node in
            var node = node
            node.children = sorted(node.children)
            return node
        }.sorted { a, b in a.count != b.count ? a.count > b.count : a.lastSampleIndex > b.lastSampleIndex }
    }

    func heaviestPath() -> [CallTree.WeightedFrame] {
        var path: [CallTree.WeightedFrame] = []
        var level = roots
        while let next = level.first {
            path.append(.init(frame: next.frame, count: next.count))
            level = next.children
        }
        return path
    }

    func dominantPath() -> [FrameKey] {
        let path = heaviestPath()
        let kept = path.prefix { $0.count * 2 > sampleCount }
        return (kept.isEmpty ? Array(path.prefix(1)) : Array(kept)).map(\.frame)
    }

    func flatten() -> [ReportCallTreeNode] {
        var out: [ReportCallTreeNode] = []
        var pending: [(node: Node, parent: Int)] = roots.reversed().map { ($0, -1) }
        while let (node, parent) = pending.popLast() {
            out.append(ReportCallTreeNode(parent: parent, address: node.frame.address, count: node.count,
                                          selfCount: node.selfCount))
            pending.append(contentsOf: node.children.reversed().map { ($0, out.count - 1) })
        }
        return out
    }
}
