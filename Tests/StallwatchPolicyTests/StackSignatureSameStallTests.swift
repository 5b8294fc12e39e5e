import Testing
@testable import StallwatchPolicy

@Suite("Same stall, by function path")
struct StackSignatureSameStallTests {
    @Test func leafHopsAreTheSameStall() {
        let a = StackSignature(rootFirst: [1, 2, 3, 10])
        let b = StackSignature(rootFirst: [1, 2, 3])
        let c = StackSignature(rootFirst: [1, 2, 3, 11])
        #expect(a.isSameStall(as: b))
        #expect(b.isSameStall(as: a))
        #expect(a.isSameStall(as: c))
    }

    @Test func aDifferentCallerIsADifferentStall() {
        let a = StackSignature(rootFirst: [1, 2, 3, 10])
        let b = StackSignature(rootFirst: [1, 5, 3, 10])
        let c = StackSignature(rootFirst: [1, 2, 4])
        #expect(!a.isSameStall(as: b))
        #expect(!a.isSameStall(as: c))
        #expect(!StackSignature(rootFirst: [7]).isSameStall(as: StackSignature(rootFirst: [8])))
        #expect(StackSignature(rootFirst: [7]).isSameStall(as: StackSignature(rootFirst: [7])))
    }
}
