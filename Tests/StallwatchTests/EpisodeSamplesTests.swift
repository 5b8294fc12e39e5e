import StallwatchReport
import Testing
@testable import Stallwatch

@Suite("An episode owns its samples")
struct EpisodeSamplesTests {
    func stack(_ frame: UInt, at nanoseconds: UInt64?) -> CapturedStack {
        var s = CapturedStack(thread: ThreadID(rawValue: 1), frames: [frame, 0x10], unwinder: .framePointer)
        s.takenAtNanoseconds = nanoseconds
        return s
    }

    @Test("samples taken after a stall ended are left out of it; those without a time are kept")
    func samplesAfterTheEnd() {
        let samples = [stack(1, at: 100), stack(2, at: 200), stack(3, at: nil), stack(4, at: 201), stack(5, at: 900)]
        let kept = CapturedStack.taken(samples, until: MonotonicInstant(nanoseconds: 200))
        #expect(kept.map { $0.frames[0] } == [1, 2, 3])
        #expect(CapturedStack.taken(samples, until: MonotonicInstant(nanoseconds: 50)).map { $0.frames[0] } == [3])
    }
}
