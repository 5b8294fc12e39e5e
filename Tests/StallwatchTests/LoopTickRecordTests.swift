import Synchronization
import Testing
@testable import Stallwatch

/// ``LoopTickRecord`` on its own: what a loop's ticks tell its watchers, and the look its next tick
/// end answers. The ticks are reported from the test's thread, as the loop reports them from its own.
@Suite("Loop tick record")
struct LoopTickRecordTests {
    private static func tickingProbe() -> (PingProbe, LoopTickRecord) {
        let record = LoopTickRecord()
        return (PingProbe(name: "ticking", target: .tickingLoop(record)) { _ in }, record)
    }

    @Test("before its first tick a loop tells nothing")
    func beforeTheFirstTick() {
        let (_, record) = Self.tickingProbe()
        let t = MonotonicInstant(nanoseconds: 1_000_000)
        #expect(!record.isReportingTicks && record.tickingThread == nil && record.lastTickEndNanoseconds == 0)
        #expect(record.takeLongestTick() == 0 && record.lastEndedPeriod == nil)
        #expect(record.tickBounds(posted: t, answered: t + .milliseconds(5)) == nil)
        #expect(!record.awaitsTick(after: t))
    }

    @Test("the first tick names the loop's thread, for the probe too until a ping names one")
    func firstTickNamesTheThread() {
        let (probe, record) = Self.tickingProbe()
        probe.recordTick(startNanoseconds: 1_000, endNanoseconds: 2_000)
        #expect(record.isReportingTicks && record.tickingThread == ThreadID.current)
        #expect(probe.thread == ThreadID.current)
        #expect(record.lastTickEndNanoseconds == 2_000)

        let (named, _) = Self.tickingProbe()
        named.noteBusyWorker(ThreadID(rawValue: 7))
        named.recordTick(startNanoseconds: 1_000, endNanoseconds: 2_000)
        #expect(named.thread == ThreadID(rawValue: 7), "a thread already known stays")
    }

    @Test("the longest tick since the last take, taken once")
    func longestTick() {
        let (probe, record) = Self.tickingProbe()
        probe.recordTick(startNanoseconds: 0, endNanoseconds: 1_000)
        probe.recordTick(startNanoseconds: 1_000, endNanoseconds: 4_000)
        probe.recordTick(startNanoseconds: 4_000, endNanoseconds: 5_000)
        #expect(record.takeLongestTick() == 3_000)
        #expect(record.takeLongestTick() == 0)
        probe.recordTick(startNanoseconds: 5_000, endNanoseconds: 4_000)
        #expect(record.takeLongestTick() == 0, "a tick that ends before it starts is no tick")
    }

    @Test("a long tick gives a stall its exact bounds, once the loop reported it")
    func longTickBounds() throws {
        let (probe, record) = Self.tickingProbe()
        let ms: UInt64 = 1_000_000
        probe.recordTick(startNanoseconds: 10 * ms, endNanoseconds: 10 * ms + 100)
        // A ping posted at 20 ms that ran at 80 ms, inside a tick from 15 to 90 ms not reported yet.
        let posted = MonotonicInstant(nanoseconds: 20 * ms), answered = MonotonicInstant(nanoseconds: 80 * ms)
        #expect(record.awaitsTick(after: answered))
        probe.recordTick(startNanoseconds: 15 * ms, endNanoseconds: 90 * ms)
        #expect(!record.awaitsTick(after: answered))
        let bounds = try #require(record.tickBounds(posted: posted, answered: answered))
        #expect(bounds.start == MonotonicInstant(nanoseconds: 15 * ms))
        #expect(bounds.end == answered, "the ping ran inside the tick: the answer ends it")
        let last = try #require(record.lastEndedPeriod)
        #expect(last.since == MonotonicInstant(nanoseconds: 15 * ms) && last.end == MonotonicInstant(nanoseconds: 90 * ms))
    }

    @Test("a look is the probe's outstanding period until the loop's next tick end answers it")
    func lookAnsweredByTheNextTick() throws {
        let (probe, record) = Self.tickingProbe()
        probe.recordTick(startNanoseconds: 1_000, endNanoseconds: 2_000)
        let now: UInt64 = 10_000
        record.beginLook(at: now, of: probe)
        #expect(record.outstandingLook && probe.postedNanoseconds == now)
        probe.recordTick(startNanoseconds: 3_000, endNanoseconds: 9_000)
        #expect(record.outstandingLook && probe.postedNanoseconds == now, "a tick that ended before the look does not answer it")
        probe.recordTick(startNanoseconds: 9_000, endNanoseconds: 50_000)
        #expect(!record.outstandingLook && probe.busySince == nil && probe.answeredCount == 1)
        #expect(probe.lastLatency == .nanoseconds(40_000))
        #expect(probe.end(ofPeriodSince: MonotonicInstant(nanoseconds: now)) == MonotonicInstant(nanoseconds: 50_000))
        record.answerLook(posted: now, ran: 60_000, of: probe)
        #expect(probe.answeredCount == 1 && probe.lastLatency == .nanoseconds(40_000), "answered exactly once")
    }

    @Test("a look that began after a tick it had not seen end is answered at once")
    func lookAfterAnUnseenTickEnd() {
        let (probe, record) = Self.tickingProbe()
        probe.recordTick(startNanoseconds: 1_000, endNanoseconds: 20_000)
        record.beginLook(at: 10_000, of: probe)
        #expect(!record.outstandingLook && probe.busySince == nil && probe.answeredCount == 1)
        #expect(probe.lastLatency == .nanoseconds(10_000))
    }
}
