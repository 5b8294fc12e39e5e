import StallwatchReport
import Testing
@testable import StallwatchPolicy

@Suite("Why a report has few samples")
struct FewSamplesTests {
    @Test("enough samples: nothing to say")
    func enough() {
        #expect(FewSamples.reason(kept: 3, dropped: 2, cause: .cpuBound, duration: .seconds(4), interval: .milliseconds(50)) == nil)
    }

    @Test("a CPU-bound stall with one sample was in long system calls; samples after its end are counted out")
    func cpuBoundInSyscalls() throws {
        let why = try #require(FewSamples.reason(kept: 1, dropped: 1, cause: .cpuBound, duration: .seconds(4),
                                                 interval: .milliseconds(50)))
        #expect(why.hasPrefix("1 sample: "))
        #expect(why.contains("long system calls"))
        #expect(why.contains("1 sample taken after it ended left out"))
    }

    @Test("blocked, starved and short stalls each say their own reason")
    func otherCauses() throws {
        let blocked = try #require(FewSamples.reason(kept: 0, dropped: 0, cause: .diskIO, duration: .seconds(2), interval: .milliseconds(50)))
        #expect(blocked.contains("blocked in the kernel") && !blocked.contains("left out"))
        let starved = try #require(FewSamples.reason(kept: 2, dropped: 0, cause: .starved, duration: .seconds(2), interval: .milliseconds(50)))
        #expect(starved.hasPrefix("2 samples: ") && starved.contains("waited for a CPU"))
        let short = try #require(FewSamples.reason(kept: 1, dropped: 3, cause: nil, duration: .milliseconds(120), interval: .milliseconds(50)))
        #expect(short.contains("less than 3 sampling intervals") && short.contains("3 samples taken after it ended"))
    }
}
