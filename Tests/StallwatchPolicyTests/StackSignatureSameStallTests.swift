import StallwatchReport
import Testing
@testable import StallwatchPolicy

@Suite("Stall identity: the dominant path")
struct StackSignatureDominantPathTests {
    func sample(_ rootFirst: [FrameKey]) -> StackSample { StackSample(frames: rootFirst.reversed()) }

    @Test func helpersUnderTheHotFunctionAreCutAway() {
        // 1 -> 2 -> hot 3, whose samples split between itself, helper 10 and helper 11.
        let a = CallTree(samples: [sample([1, 2, 3, 10]), sample([1, 2, 3, 11]), sample([1, 2, 3]), sample([1, 2, 3, 10])])
        let b = CallTree(samples: [sample([1, 2, 3, 11]), sample([1, 2, 3, 11]), sample([1, 2, 3]), sample([1, 2, 3, 10])])
        #expect(StackSignature(dominantPathOf: a) == StackSignature(rootFirst: [1, 2, 3]))
        #expect(StackSignature(dominantPathOf: a) == StackSignature(dominantPathOf: b))
    }

    @Test func aDifferentHotFunctionIsADifferentStall() {
        let a = CallTree(samples: [sample([1, 2, 4]), sample([1, 2, 4]), sample([1, 2, 4, 9])])
        let b = CallTree(samples: [sample([1, 2, 5]), sample([1, 2, 5]), sample([1, 2, 5])])
        #expect(StackSignature(dominantPathOf: a) == StackSignature(rootFirst: [1, 2, 4]))
        #expect(StackSignature(dominantPathOf: a) != StackSignature(dominantPathOf: b))
    }

    @Test func aSingleSampleKeepsItsWholePath() {
        let t = CallTree(samples: [sample([1, 2, 3])])
        #expect(StackSignature(dominantPathOf: t) == StackSignature(rootFirst: [1, 2, 3]))
        #expect(StackSignature(dominantPathOf: CallTree(samples: [])).frames.isEmpty)
    }
}

@Suite("Same stall: prefix of dominant paths")
struct StackSignatureSameStallTests {
    @Test func gainingOrLosingTheLeafIsTheSameStall() {
        let a = StackSignature(rootFirst: [1, 2, 3])
        let b = StackSignature(rootFirst: [1, 2, 3, 10])
        #expect(a.isSameStall(as: b) && b.isSameStall(as: a) && a.isSameStall(as: a))
    }

    @Test func siblingsOrOtherCallersAreDifferentStalls() {
        let a = StackSignature(rootFirst: [1, 2, 3, 10])
        #expect(!a.isSameStall(as: StackSignature(rootFirst: [1, 2, 3, 11])))
        #expect(!a.isSameStall(as: StackSignature(rootFirst: [1, 5, 3, 10])))
        #expect(!StackSignature(rootFirst: []).isSameStall(as: StackSignature(rootFirst: [])))
    }
}
