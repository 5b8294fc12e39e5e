import StallwatchPolicy
import StallwatchReport
import Testing

@Suite struct CallTreeTests {
    private func path(_ tree: CallTree) -> [FrameKey] { tree.heaviestPath().map(\.frame) }

    @Test func aggregatesByFunctionWithCounts() {
        let tree = CallTree(samples: [
            sample(1, 2, 3), sample(1, 2, 3), sample(1, 2, 4), sample(1, 5),
        ])
        #expect(tree.sampleCount == 4)
        #expect(tree.heaviestPath() == [
            .init(frame: 1, count: 4), .init(frame: 2, count: 3), .init(frame: 3, count: 2),
        ])
        #expect(tree.selfCounts == [3: 2, 4: 1, 5: 1])
        var walked = tree
        let nodes = ReportCallTreeNode.flatten(&walked, frames: FrameTable())
        #expect(nodes.filter { $0.parent == -1 }.count == 1)
        #expect(nodes.filter { $0.parent == 0 }.map(\.address.value) == [2, 5])
    }

    @Test func tieGoesToTheMostRecentSample() {
        let older = CallTree(samples: [sample(1, 2), sample(1, 3)])
        #expect(path(older) == [1, 3])
        let newer = CallTree(samples: [sample(1, 3), sample(1, 2)])
        #expect(path(newer) == [1, 2])
    }

    @Test func emptyInputGivesEmptyPath() {
        #expect(CallTree(samples: []).heaviestPath().isEmpty)
        #expect(CallTree(samples: [StackSample(frames: [])]).sampleCount == 0)
    }

    /// The thread spends the stall in `parse` (0x20) whose leaf keeps moving between helpers, and
    /// at the end briefly in `log` (0x30 → 0x31). matrix's longest-run rule blames `log`; the
    /// call tree blames `parse`, where 8 of the 11 samples were.
    @Test func heaviestPathBeatsMatrixWhenTheLeafMoves() throws {
        let samples = [
            sample(0x1, 0x20, 0x21), sample(0x1, 0x20, 0x22), sample(0x1, 0x20, 0x21), sample(0x1, 0x20, 0x22),
            sample(0x1, 0x20, 0x21), sample(0x1, 0x20, 0x22), sample(0x1, 0x20, 0x21), sample(0x1, 0x20, 0x22),
            sample(0x1, 0x30, 0x31), sample(0x1, 0x30, 0x31), sample(0x1, 0x30, 0x31),
        ]
        let matrix = try #require(MatrixBlame.pick(samples))
        #expect(matrix == sample(0x1, 0x30, 0x31))
        let tree = CallTree(samples: samples)
        #expect(path(tree) == [0x1, 0x20, 0x22])
        #expect(tree.heaviestPath().map(\.count) == [11, 8, 4])
    }

    @Test func matrixPrefersTheNewestOfEqualRuns() {
        let samples = [sample(1, 2), sample(1, 2), sample(1, 3), sample(1, 3)]
        #expect(MatrixBlame.pick(samples) == sample(1, 3))
        #expect(MatrixBlame.pick([]) == nil)
    }

    @Test func signatureComparesByFunctionNotPC() {
        let a = StackSample(frames: [FrameKey(pc: 0x1234, functionStart: 0x1200), FrameKey(pc: 0x5010, functionStart: 0x5000)])
        let b = StackSample(frames: [FrameKey(pc: 0x1250, functionStart: 0x1200), FrameKey(pc: 0x5020, functionStart: 0x5000)])
        #expect(StackSignature(sample: a) == StackSignature(sample: b))
        #expect(StackSignature(sample: a).frames == [0x5000, 0x1200])
        let unknown = StackSample(frames: [FrameKey(pc: 0x1234, functionStart: nil)])
        #expect(unknown.frames == [0x1234])
        #expect(StackSignature(heaviestPathOf: CallTree(samples: [a, b])) == StackSignature(sample: a))
    }
}
