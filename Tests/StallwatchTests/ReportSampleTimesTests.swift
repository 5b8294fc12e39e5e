import StallwatchReport
import Testing
@testable import Stallwatch

/// A report's call tree says when each of its samples was taken, as offsets from the stall's start.
@Suite("Report sample times")
struct ReportSampleTimesTests {
    private static func stack(_ frames: [UInt], takenAt: UInt64?) -> CapturedStack {
        var stack = CapturedStack(thread: ThreadID(rawValue: 1), frames: frames, unwinder: .framePointer)
        stack.takenAtNanoseconds = takenAt
        return stack
    }

    @Test("each leaf lists its samples' offsets from the start, oldest first; an untimed sample leaves its leaf without")
    func offsetsPerLeaf() throws {
        // Leaves at functions' entries (an innermost frame is looked up at itself: its key is the
        // entry), in the Swift runtime, which ASan's interceptors do not replace.
        let (a, b, c) = (try entry("swift_allocObject"), try entry("swift_retain"), try entry("pthread_create"))
        let start = MonotonicInstant(nanoseconds: 5_000_000_000)
        let ms: UInt64 = 1_000_000
        let samples = [
            Self.stack([a, c + 16], takenAt: start.nanoseconds + 10 * ms),
            Self.stack([b, c + 16], takenAt: start.nanoseconds + 60 * ms),
            Self.stack([a, c + 16], takenAt: start.nanoseconds - 20 * ms),  // before the start: said, negative
            Self.stack([a, c + 16], takenAt: start.nanoseconds + 110 * ms),
            Self.stack([b, c + 16], takenAt: nil),
        ]
        let builder = ReportBuilder(configuration: WatchdogConfiguration(), symbolizer: Symbolizer())
        var report = StallReport(kind: .stall, id: "times", startTimeUnixNanoseconds: MonotonicClock.unixNanoseconds(ofMonotonic: start),
                                 duration: .seconds(1), durationIsFinal: false, threadCount: 1, configuration: WatchdogConfiguration())
        builder.fill(&report, samples: samples)
        let first = try #require(report.callTree.first { $0.address.value == UInt64(a) })
        let second = try #require(report.callTree.first { $0.address.value == UInt64(b) })
        let root = try #require(report.callTree.first { $0.parent == -1 })
        #expect(first.selfCount == 3)
        // Two clock readings a few µs apart turn monotonic times into Unix ones.
        let got = try #require(first.sampleOffsetsNanoseconds).map { Int((Double($0) / 1e6).rounded()) }
        #expect(got == [10, -20, 110], "\(first.sampleOffsetsNanoseconds ?? [])")
        #expect(second.selfCount == 2 && second.sampleOffsetsNanoseconds == nil)
        #expect(root.selfCount == 0 && root.sampleOffsetsNanoseconds == nil)
    }

    private func entry(_ name: String) throws -> UInt {
        let address = try #require(LoadedSymbols.address(of: name), "\(name) is not loaded")
        return UInt(bitPattern: address)
    }
}
