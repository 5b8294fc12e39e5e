import CSamplerTestSupport
import Dispatch
import Glibc
import Synchronization
import Testing
@testable import Stallwatch

/// ``PingedLoopWatcher`` on its own, driven from the test the way the watchdog drives it: its pings'
/// lag, its looks at a loop that reports its ticks (busy, ticking, asleep in `epoll_wait`), and
/// where it dates the start of a ping that waits.
@Suite("Pinged loop watcher", .serialized)
struct PingedLoopWatcherTests {
    /// Pings that wait until the test runs them.
    final class HeldJobs: Sendable {
        private let jobs = Mutex<[@Sendable () -> Void]>([])
        func post(_ job: @escaping @Sendable () -> Void) { jobs.withLock { $0.append(job) } }
        var isEmpty: Bool { jobs.withLock { $0.isEmpty } }
        func runAll() {
            for job in jobs.withLock({ held in defer { held.removeAll() }; return held }) { job() }
        }
    }

    /// A probe whose pings wait in the returned jobs until the test runs them.
    private static func heldProbe(_ name: String) -> (PingProbe, HeldJobs) {
        let jobs = HeldJobs()
        let probe = PingProbe(name: name) { jobs.post($0) }
        return (probe, jobs)
    }

    /// A probe of a loop that reports its ticks, whose pings wait in the returned jobs.
    private static func tickingProbe(_ name: String) -> (PingProbe, LoopTickRecord, HeldJobs) {
        let jobs = HeldJobs()
        let record = LoopTickRecord()
        let probe = PingProbe(name: name, target: .tickingLoop(record)) { jobs.post($0) }
        return (probe, record, jobs)
    }

    @Test("a ping answered before the watcher is not its lag; each later answer is taken once")
    func lagIsEachAnswerOnce() {
        let (probe, jobs) = Self.heldProbe("held")
        probe.pingIfIdle()
        usleep(3_000)
        jobs.runAll()
        let watcher = PingedLoopWatcher(probe: probe)
        #expect(watcher.takeAnsweredLatency() == nil, "the answer came before this watcher")
        probe.pingIfIdle()
        usleep(5_000)
        jobs.runAll()
        let lag = watcher.takeAnsweredLatency()
        #expect(lag.map { $0 >= .milliseconds(5) && $0 < .seconds(60) } == true, "\(String(describing: lag))")
        #expect(watcher.takeAnsweredLatency() == nil, "taken once")
    }

    @Test("a loop that reports its ticks: its longest tick since the last take is its lag, with no ping")
    func tickIsLag() {
        let (probe, _, jobs) = Self.tickingProbe("ticking")
        let watcher = PingedLoopWatcher(probe: probe)
        let start = MonotonicClock.nowNanoseconds()
        probe.recordTick(startNanoseconds: start, endNanoseconds: start + 3_000_000)
        probe.recordTick(startNanoseconds: start + 3_000_000, endNanoseconds: start + 4_000_000)
        #expect(watcher.takeAnsweredLatency() == .milliseconds(3))
        #expect(watcher.takeAnsweredLatency() == nil)
        // Looked at, not pinged: a tick ended since the last look means the loop is free.
        watcher.lookOrPing()
        #expect(probe.postedNanoseconds == 0 && jobs.isEmpty)
        #expect(watcher.counters.snapshot.pings == 0 && watcher.counters.snapshot.looks == 1)
    }

    @Test("a loop without ticks is pinged once per outstanding ping, each counted")
    func pingedLoopIsPinged() {
        let (probe, jobs) = Self.heldProbe("pinged")
        let watcher = PingedLoopWatcher(probe: probe)
        #expect(watcher.ticks == nil && !watcher.watchesCooperativePool)
        watcher.lookOrPing()
        watcher.lookOrPing()
        #expect(probe.postedNanoseconds != 0)
        #expect(watcher.counters.snapshot == LookCounters.Snapshot(looks: 0, cpuClockReads: 0, procReads: 0, busy: 0, pings: 1),
                "one ping outstanding at a time: \(watcher.counters.snapshot)")
        jobs.runAll()
        watcher.lookOrPing()
        #expect(watcher.counters.snapshot.pings == 2)
    }

    @Test("a looked-at loop busy between ticks: an outstanding look, answered by its next tick's end")
    func busyBetweenTicksIsALook() throws {
        let (probe, record, jobs) = Self.tickingProbe("busy")
        let watcher = PingedLoopWatcher(probe: probe)
        let tickAgain = Atomic<Bool>(false)
        let loop = TestThread(name: "sw-busy-loop") { t in
            let start = MonotonicClock.nowNanoseconds()
            probe.recordTick(startNanoseconds: start, endNanoseconds: MonotonicClock.nowNanoseconds())
            // Busy on the CPU, in no tick the loop has reported yet.
            let busyFrom = MonotonicClock.nowNanoseconds()
            while !tickAgain.load(ordering: .acquiring), !t.shouldStop {}
            probe.recordTick(startNanoseconds: busyFrom, endNanoseconds: MonotonicClock.nowNanoseconds())
        }
        defer { loop.stopAndJoin() }
        #expect(eventually(timeout: .seconds(10)) { record.lastTickEndNanoseconds != 0 })
        watcher.lookOrPing()  // the first tick ended since the last look: free
        #expect(probe.postedNanoseconds == 0)
        // The thread spins now: the next look finds it running, with no tick ended since.
        // Waits (not bounds): a loaded machine may take long to run the threads.
        let deadline = ContinuousClock.now + .seconds(10)
        var looked = false
        while !looked, ContinuousClock.now < deadline {
            usleep(2_000)
            watcher.lookOrPing()
            looked = probe.postedNanoseconds != 0
        }
        #expect(looked && record.outstandingLook, "no look found the spinning loop busy")
        #expect(watcher.counters.snapshot.busy == 1)
        #expect(jobs.isEmpty, "a look posts nothing")
        let posted = probe.postedNanoseconds
        #expect(watcher.estimatedStart(posted: MonotonicInstant(nanoseconds: posted), pingPeriod: .milliseconds(40))
            <= MonotonicInstant(nanoseconds: posted))
        tickAgain.store(true, ordering: .releasing)
        #expect(eventually(timeout: .seconds(10)) { probe.postedNanoseconds == 0 }, "the next tick's end answers the look")
        #expect(watcher.takeAnsweredLatency() != nil)
    }

    @Test("a looked-at loop asleep in epoll_wait: free, and its descriptor is the one to rest on")
    func asleepInEpollWait() throws {
        let (probe, record, _) = Self.tickingProbe("asleep")
        let watcher = PingedLoopWatcher(probe: probe)
        var eventfd: Int32 = -1
        let epfd = sw_test_loop_epoll(&eventfd)
        try #require(epfd >= 0, "\(epfd)")
        let efd = eventfd
        defer { close(epfd); close(efd) }
        let loop = TestThread(name: "sw-epoll-loop") { t in
            let now = MonotonicClock.nowNanoseconds()
            probe.recordTick(startNanoseconds: now, endNanoseconds: now)
            while !t.shouldStop { _ = sw_test_loop_sleep(epfd, efd) }
        }
        defer {
            loop.stop.store(true, ordering: .releasing)
            sw_test_loop_kick(efd)
            loop.stopAndJoin()
        }
        #expect(eventually(timeout: .seconds(10)) { record.lastTickEndNanoseconds != 0 })
        watcher.lookOrPing()  // the tick ended since the last look
        #expect(watcher.asleepEpollFD == nil, "a look that saw a tick end did not see the thread")
        let deadline = ContinuousClock.now + .seconds(10)
        var asleep: Int32?
        while asleep == nil, ContinuousClock.now < deadline {
            usleep(2_000)
            watcher.lookOrPing()
            asleep = watcher.asleepEpollFD
        }
        #expect(probe.postedNanoseconds == 0, "asleep is free: no look outstanding")
        #expect(asleep == epfd, "the look names the loop's epoll descriptor: \(String(describing: asleep)) against \(epfd)")
        #expect(watcher.stillAsleep())
        watcher.beginRest()
        #expect(watcher.isResting)
        let woken = MonotonicClock.nowNanoseconds()
        watcher.endRest(wokenAt: woken)
        #expect(!watcher.isResting)
        // Free until it was woken: a ping posted 10 ms on is dated from the wake, at the midpoint.
        let posted = MonotonicInstant(nanoseconds: woken + 10_000_000)
        #expect(watcher.estimatedStart(posted: posted, pingPeriod: .milliseconds(40)) == posted - .milliseconds(5))
    }

    @Test("a watchdog shows a pinged loop's counts only while its thread watches the loop")
    func watchdogShowsCounts() throws {
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(300), watchPoolJobs: false),
                                    metrics: nil) { _ in }
        let probe = PingProbe.dispatchQueue(DispatchQueue(label: "sw-counted"), name: "counted")
        watchdog.monitor(probe)
        #expect(watchdog.lookCounts(of: probe) == nil, "not watched before the thread runs")
        try watchdog.start()
        defer { watchdog.stop() }
        // The first ping goes out when the probe is monitored; the watcher posts the next ones.
        #expect(eventually(timeout: .seconds(10)) { (watchdog.lookCounts(of: probe)?.pings ?? 0) >= 2 })
        #expect(watchdog.lookCounts(of: probe)?.looks == 0, "a queue is pinged, never looked at")
        watchdog.unmonitor(probe)
        #expect(eventually(timeout: .seconds(10)) { watchdog.lookCounts(of: probe) == nil })
    }

    @Test("a waiting ping is dated at the midpoint since the loop was last free, at most half a period back")
    func estimatedStartIsTheMidpoint() {
        let (probe, jobs) = Self.heldProbe("dated")
        let watcher = PingedLoopWatcher(probe: probe)
        let now = MonotonicClock.now()
        #expect(watcher.estimatedStart(posted: now, pingPeriod: .milliseconds(40)) == now, "never answered: the post itself")
        probe.pingIfIdle()
        jobs.runAll()
        let answered = MonotonicInstant(nanoseconds: probe.answeredAtNanoseconds)
        #expect(watcher.estimatedStart(posted: answered + .milliseconds(10), pingPeriod: .milliseconds(40))
            == answered + .milliseconds(5))
        #expect(watcher.estimatedStart(posted: answered + .milliseconds(100), pingPeriod: .milliseconds(40))
            == answered + .milliseconds(80), "a gap longer than a period counts as one period")
        #expect(watcher.estimatedStart(posted: answered, pingPeriod: .milliseconds(40)) == answered,
                "posted no later than the answer: the post")
    }
}
