import StallwatchPolicy
import StallwatchReport
import Testing
@testable import Stallwatch

/// A report resolves each distinct frame address once, and names its nodes and blamed stack as a
/// lookup at each function key would: the call tree reads the frames it resolved while it was
/// built instead of asking the symbolizer again for every node.
@Suite("Report builder lookups", .serialized)
struct ReportBuilderLookupTests {
    /// Entries of functions loaded in every test process, well over 16 bytes long.
    private static func entry(_ name: String) throws -> UInt {
        let address = LoadedSymbols.address(of: name)
        try #require(address != nil, "\(name) is not loaded")
        return UInt(bitPattern: address)
    }

    private static func stack(_ frames: [UInt], async: Range<Int>? = nil) -> CapturedStack {
        var stack = CapturedStack(thread: ThreadID(rawValue: 1), frames: frames, unwinder: .framePointer)
        stack.asyncFrames = async
        return stack
    }

    private static func emptyReport() -> StallReport {
        StallReport(kind: .stall, id: "lookups", startTimeUnixNanoseconds: 0, duration: .seconds(1),
                    durationIsFinal: false, threadCount: 1, configuration: WatchdogConfiguration())
    }

    @Test("one report looks up each distinct (address, innermost) frame once, however often it repeats")
    func oneLookupPerDistinctFrameAddress() throws {
        let (a, b, c, d) = (try Self.entry("malloc"), try Self.entry("free"), try Self.entry("pthread_create"),
                            try Self.entry("swift_retain"))
        let samples = [
            Self.stack([a + 2, b + 8, c + 16]),
            Self.stack([a + 2, b + 8, c + 16]),
            Self.stack([a + 6, b + 8, c + 16]),
            // The same address as the innermost frame is looked up at itself, not one byte before.
            Self.stack([b + 8, c + 16]),
            // An async frame is stored as its resume function's entry + 1.
            Self.stack([a + 2, d + 1, c + 16], async: 1..<2),
            Self.stack([a + 2, d + 1, c + 16], async: 1..<2),
        ]
        // a + 2, a + 6 and b + 8 as they are; b + 7, c + 15 and d one byte before their frame.
        let distinct = 6
        let symbolizer = Symbolizer()
        let builder = ReportBuilder(configuration: WatchdogConfiguration(), symbolizer: symbolizer)
        var report = Self.emptyReport()
        let before = symbolizer.lookups
        builder.fill(&report, samples: samples)
        #expect(symbolizer.lookups - before == distinct)
        #expect(report.sampleCount == samples.count)
        #expect(report.callTree.contains { $0.address.value == UInt64(d) }, "the async frame is keyed by its resume function")

        // What a lookup at each key gives: what the report said before it resolved each frame once.
        for node in report.callTree {
            let info = symbolizer.symbolize(UInt(node.address.value)).info
            #expect(node.symbol == info.symbol && node.module == info.module, "\(node.address)")
        }
        for frame in report.blamedStack {
            let info = symbolizer.symbolize(UInt(frame.address.value)).info
            #expect(frame == ReportFrame(address: frame.address.value, info: info, sampleCount: frame.sampleCount))
        }
        #expect(report.blamedStack.first?.symbol != nil)
    }
}
