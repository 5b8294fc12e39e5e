import StallwatchPolicy
import StallwatchReport
import Testing
@testable import Stallwatch

/// The report builder is facts in, report out: every report here is built from plain values, with
/// thread ids and names no process has, and says exactly what it was given.
@Suite("Report builder from facts")
struct ReportBuilderFactsTests {
    private static func entry(_ name: String) throws -> UInt {
        let address = LoadedSymbols.address(of: name)
        try #require(address != nil, "\(name) is not loaded")
        return UInt(bitPattern: address)
    }

    private static let stalled = ThreadID(rawValue: 999_901)
    private let builder = ReportBuilder(configuration: WatchdogConfiguration(), symbolizer: Symbolizer())

    @Test("a stall report says the thread, counts, other threads and blame it was given")
    func stallReportFromPlainValues() throws {
        let (a, b, c) = (try Self.entry("malloc"), try Self.entry("free"), try Self.entry("pthread_create"))
        let samples = (0..<3).map { _ in CapturedStack(thread: Self.stalled, frames: [a + 2, b + 8, c + 16], unwinder: .framePointer) }
        let other = ThreadStack(thread: ThreadIdentity(id: 999_902, name: "bystander"), state: "S", syscall: 202, frames: [])
        let itself = ThreadStack(thread: ThreadIdentity(id: Self.stalled.rawValue, name: "worker-7"), state: "R", frames: [])
        let start = MonotonicInstant(nanoseconds: 5_000_000_000)
        let round = RoundFacts(at: start + .seconds(2), threadCount: 9, otherThreads: [itself, other], process: nil,
                               topology: [NUMANode(id: 0, cpus: [0, 1], memoryBytes: 1 << 30, freeBytes: 1 << 29)])
        let facts = ReportBuilder.StallFacts(
            loopName: "loop-under-test", thread: Self.stalled, threadName: "worker-7", start: start,
            elapsed: .seconds(2), cause: StallCause(kind: .cpuBound, evidence: "given"), evidence: nil, round: round,
            processCPUPercent: 42, counters: ReportCounters(filteredSinceLastReport: 3), lateness: .milliseconds(4),
            sampling: nil)
        let report = builder.stallReport(id: "facts-1", facts, samples: samples)
        #expect(report.id == "facts-1" && report.kind == .stall && report.loopName == "loop-under-test")
        #expect(report.thread == ThreadIdentity(id: Self.stalled.rawValue, name: "worker-7"))
        // The wall clock's offset is read at each conversion: nanoseconds apart.
        #expect(abs(report.startTimeUnixNanoseconds - MonotonicClock.unixNanoseconds(ofMonotonic: start)) < 1_000_000)
        #expect(report.durationNanoseconds == 2_000_000_000 && !report.durationIsFinal)
        #expect(report.cause == StallCause(kind: .cpuBound, evidence: "given"))
        #expect(report.threadCount == 9)
        // The stalled thread is the report's subject, not one of its other threads.
        #expect(report.otherThreads?.map(\.thread.name) == ["bystander"])
        #expect(report.numa?.nodes.map(\.id) == [0])
        #expect(report.counters.filteredSinceLastReport == 3)
        #expect(report.sampleCount == 3)
        // glibc names its entry `malloc` or `__libc_malloc` (aliases at one address).
        #expect(report.blamedStack.first?.symbol?.hasSuffix("malloc") == true, "\(report.blamedStack.map(\.symbol))")
        #expect(report.blamedStack.map(\.sampleCount) == [3, 3, 3])
    }

    @Test("a stall on a loop whose thread is not known yet has no thread and no thread CPU")
    func unknownThread() {
        let start = MonotonicInstant(nanoseconds: 1_000_000_000)
        let facts = ReportBuilder.StallFacts(
            loopName: "pinged", thread: nil, start: start, elapsed: .milliseconds(600),
            cause: StallCause(kind: .unknown, evidence: "no ping ran"), evidence: nil,
            round: RoundFacts(at: start, threadCount: 4, otherThreads: nil, process: nil, topology: []),
            processCPUPercent: 0, counters: ReportCounters(), lateness: .zero, sampling: nil)
        let report = builder.stallReport(id: "facts-2", facts, samples: [])
        #expect(report.thread == nil && report.threadCPU.isEmpty && report.otherThreads == nil)
        #expect(report.sampleCount == 0 && report.blamedStack.isEmpty && report.threadCount == 4)
    }

    @Test("busy-loop and CPU reports carry the thread count and identity they are given")
    func otherKindsFromFacts() throws {
        let a = try Self.entry("malloc")
        let thread = ThreadIdentity(id: Self.stalled.rawValue, name: "busy-one")
        let busy = builder.busyLoopReport(
            id: "facts-3", loopName: "busy", thread: thread, busyFor: .seconds(3), demandPercent: 97,
            path: StackSignature(rootFirst: [FrameKey(pc: UInt64(a), functionStart: UInt64(a))]), count: 20,
            now: MonotonicInstant(nanoseconds: 10_000_000_000), lateness: .zero, threadCount: 12)
        #expect(busy.kind == .busyLoop && busy.thread == thread && busy.threadCount == 12 && busy.sampleCount == 20)
        let cpu = builder.cpuReport(
            id: "facts-4", event: .sustainedHigh(average: 1.5, duration: .seconds(30)),
            windowStart: MonotonicInstant(nanoseconds: 1), wall: .seconds(1),
            now: MonotonicInstant(nanoseconds: 40_000_000_000), cores: 2, threadCount: 31)
        #expect(cpu.kind == .cpuSustained && cpu.threadCount == 31 && cpu.durationIsFinal)
    }

    @Test("a CPU-high report that names no thread, or only some, says why")
    func cpuReportSaysWhyThreadsAreMissing() {
        let start = MonotonicInstant(nanoseconds: 7_000_000_000)
        let unnamed = builder.cpuReport(id: "cpu-1", event: .processCPUHigh(usage: 1.5, topThreads: []), windowStart: start,
                                        wall: .seconds(1), now: start + .seconds(1), cores: 2, threadCount: 4,
                                        threadsUnread: "its threads could not be listed (listing failed)")
        #expect(unnamed.cause?.evidence == "process CPU 150 % of one core on 2 cores; no thread named: its threads could not be listed (listing failed)")
        let top = [ThreadCPUShare(threadID: 999_903, name: "", fraction: 0.9)]
        let some = builder.cpuReport(id: "cpu-2", event: .processCPUHigh(usage: 1.5, topThreads: top), windowStart: start,
                                     wall: .seconds(1), now: start + .seconds(1), cores: 2, threadCount: 4,
                                     threadsUnread: "1 of its top threads exited before they were named")
        #expect(some.cause?.evidence.hasSuffix("; threads named in part: 1 of its top threads exited before they were named") == true)
        #expect(some.threadCPU.map(\.thread.id) == [999_903])
        let whole = builder.cpuReport(id: "cpu-3", event: .processCPUHigh(usage: 1.5, topThreads: top), windowStart: start,
                                      wall: .seconds(1), now: start + .seconds(1), cores: 2, threadCount: 4)
        #expect(whole.cause?.evidence == "process CPU 150 % of one core on 2 cores")
    }
}
