import StallwatchPolicy
import StallwatchReport
import Testing

/// The reusable store must give exactly what ``CallTree`` gives: the reports' JSON depends on it.
@Suite struct CallTreeStoreTests {
    private func store(_ samples: [StackSample], into store: inout CallTreeStore) {
        store.removeAll()
        for (i, s) in samples.enumerated() { store.add(leafFirst: s.frames, index: i) }
    }

    private func nodes(_ store: inout CallTreeStore) -> [ReportCallTreeNode] {
        ReportCallTreeNode.flatten(&store, describe: { _ in .unknown })
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
        var reused = CallTreeStore()
        for seed in 1...200 as ClosedRange<UInt64> {
            let samples = randomSamples(seed: seed, count: Int(seed % 40))
            let tree = CallTree(samples: samples)
            store(samples, into: &reused)
            #expect(reused.sampleCount == tree.sampleCount)
            var path: [CallTree.WeightedFrame] = []
            reused.forEachOnHeaviestPath { path.append(.init(frame: $0, count: $1)); return true }
            #expect(path == tree.heaviestPath(), "seed \(seed)")
            var dominant: [FrameKey] = [99]
            reused.dominantPath(into: &dominant)
            #expect(dominant == StackSignature(dominantPathOf: tree).frames, "seed \(seed)")
            #expect(nodes(&reused) == ReportCallTreeNode.flatten(tree, describe: { _ in .unknown }), "seed \(seed)")
            #expect(ReportFrame.blamedStack(of: reused, describe: { _ in .unknown })
                    == ReportFrame.blamedStack(of: tree, describe: { _ in .unknown }), "seed \(seed)")
        }
    }

    @Test func countsAndOrderOfAKnownTree() {
        var s = CallTreeStore()
        store([sample(1, 2, 3), sample(1, 2, 3), sample(1, 2, 4), sample(1, 5)], into: &s)
        let flat = nodes(&s)
        // Root 1, then its heaviest child 2 with 3 (2 samples) before 4, then 5.
        #expect(flat.map(\.address.value) == [1, 2, 3, 4, 5])
        #expect(flat.map(\.parent) == [-1, 0, 1, 1, 0])
        #expect(flat.map(\.count) == [4, 3, 2, 1, 1])
        #expect(flat.map(\.selfCount) == [0, 0, 2, 1, 1])
    }

    @Test func emptyAfterRemoveAll() {
        var s = CallTreeStore()
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
        var s = CallTreeStore()
        s.add(leafFirst: [2, 1], index: 0)
        s.add(leafFirst: [3, 1], index: 1)
        #expect(nodes(&s).map(\.address.value) == [1, 3, 2])
        s.add(leafFirst: [2, 1], index: 2)
        #expect(nodes(&s).map(\.address.value) == [1, 2, 3])
    }
}
