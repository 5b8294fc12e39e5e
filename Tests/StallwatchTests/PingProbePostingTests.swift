import Glibc
import Synchronization
import Testing
@testable import Stallwatch

/// ``PingProbe``'s posting API on its own: one ping outstanding at a time, its answer, and a busy
/// period no ping answers (a look's).
@Suite("Ping probe posting")
struct PingProbePostingTests {
    /// Pings that wait until the test runs them.
    final class HeldJobs: Sendable {
        private let jobs = Mutex<[@Sendable () -> Void]>([])
        func post(_ job: @escaping @Sendable () -> Void) { jobs.withLock { $0.append(job) } }
        var count: Int { jobs.withLock { $0.count } }
        func runAll() {
            for job in jobs.withLock({ held in defer { held.removeAll() }; return held }) { job() }
        }
    }

    private static func heldProbe() -> (PingProbe, HeldJobs) {
        let jobs = HeldJobs()
        return (PingProbe(name: "held") { jobs.post($0) }, jobs)
    }

    @Test("one ping at a time; its answer tells when it ran, on which thread, how late")
    func pingAndAnswer() throws {
        let (probe, jobs) = Self.heldProbe()
        #expect(probe.pingIfIdle())
        #expect(!probe.pingIfIdle(), "one outstanding ping at a time")
        #expect(jobs.count == 1)
        let posted = try #require(probe.busySince)
        #expect(probe.postedNanoseconds == posted.nanoseconds && probe.thread == nil && probe.answeredCount == 0)
        usleep(2_000)
        jobs.runAll()
        #expect(probe.busySince == nil && probe.answeredCount == 1)
        #expect(probe.thread == ThreadID.current, "the thread that ran the ping")
        let ran = try #require(probe.end(ofPeriodSince: posted))
        #expect(ran.nanoseconds == probe.answeredAtNanoseconds)
        #expect(probe.lastLatency == .nanoseconds(Int64(ran.nanoseconds - posted.nanoseconds)))
        #expect(probe.lastLatency >= .milliseconds(2))
        #expect(probe.end(ofPeriodSince: posted - .nanoseconds(1)) == nil, "another period's end is unknown")
        #expect(probe.pingIfIdle(), "answered: the next ping goes out")
    }

    @Test("a busy period no ping answers: a queued ping no longer ends it, one claim does, once")
    func unpostedPeriod() throws {
        let (probe, jobs) = Self.heldProbe()
        #expect(probe.pingIfIdle())
        let pingPosted = probe.postedNanoseconds
        // The ping is answered by a claim instead (a look at a ticking loop), then a look's period begins.
        #expect(probe.claimOutstanding(postedAt: pingPosted))
        probe.answerClaimed(posted: pingPosted, ran: pingPosted + 1_000)
        let since = pingPosted + 5_000
        probe.markBusy(since: since)
        jobs.runAll()
        #expect(probe.postedNanoseconds == since, "the earlier ping's job does not end the look's period")
        #expect(probe.thread == nil, "nor does it name a thread")
        #expect(!probe.claimOutstanding(postedAt: since - 1), "only the outstanding period is claimed")
        #expect(probe.claimOutstanding(postedAt: since))
        #expect(!probe.claimOutstanding(postedAt: since), "exactly once")
        probe.answerClaimed(posted: since, ran: since + 3_000_000)
        #expect(probe.answeredCount == 2 && probe.busySince == nil)
        #expect(probe.lastLatency == .milliseconds(3))
        #expect(probe.end(ofPeriodSince: MonotonicInstant(nanoseconds: since)) == MonotonicInstant(nanoseconds: since + 3_000_000))
    }

    @Test("a loop's own thread is noted only until a ping names one; a busy worker always")
    func threadNotes() {
        let (probe, jobs) = Self.heldProbe()
        probe.noteThreadIfUnknown(ThreadID(rawValue: 7))
        #expect(probe.thread == ThreadID(rawValue: 7))
        probe.noteThreadIfUnknown(ThreadID(rawValue: 8))
        #expect(probe.thread == ThreadID(rawValue: 7), "known already")
        probe.noteBusyWorker(ThreadID(rawValue: 9))
        #expect(probe.thread == ThreadID(rawValue: 9))
        probe.pingIfIdle()
        jobs.runAll()
        #expect(probe.thread == ThreadID.current)
    }

    @Test("what a probe pings: an executor unless made for the pool or a ticking loop")
    func targets() {
        #expect(Self.heldProbe().0.target.tickRecord == nil)
        #expect(!Self.heldProbe().0.target.isCooperativePool)
        #expect(PingProbe.cooperativePool().target.isCooperativePool)
        let record = LoopTickRecord()
        let ticking = PingProbe(name: "ticking", target: .tickingLoop(record)) { _ in }
        #expect(ticking.target.tickRecord === record && !ticking.target.isCooperativePool)
    }

    @Test("ticks reported to a probe of an executor are kept nowhere")
    func ticksWithoutARecord() {
        let (probe, _) = Self.heldProbe()
        probe.recordTick(startNanoseconds: 1_000, endNanoseconds: 5_000_000)
        #expect(probe.thread == nil && probe.answeredCount == 0)
    }
}
