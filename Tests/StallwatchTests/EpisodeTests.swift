import Dispatch
import Foundation
import Glibc
import StallwatchPolicy
import StallwatchReport
import Synchronization
import Testing
@testable import Stallwatch

// Three phases in three functions: a CPU-bound stall whose stack moves as it runs, like
// `JSONEncoder().encode` of a big array.
@inline(never) func episodeFixturePhaseA(_ ms: Int) { stallwatchFixtureCPUStall(milliseconds: ms) }
@inline(never) func episodeFixturePhaseB(_ ms: Int) { stallwatchFixtureCPUStall(milliseconds: ms) }
@inline(never) func episodeFixturePhaseC(_ ms: Int) { stallwatchFixtureCPUStall(milliseconds: ms) }
@inline(never) func episodeFixtureMovingStall(_ ms: Int) {
    episodeFixturePhaseA(ms)
    episodeFixturePhaseB(ms)
    episodeFixturePhaseC(ms)
}

/// Where a stall really began and ended (monotonic), as the stalling code saw it.
final class StallTiming: Sendable {
    private let bounds = Mutex<(start: MonotonicInstant?, end: MonotonicInstant?)>((nil, nil))
    func begin() { bounds.withLock { $0.start = MonotonicClock.now() } }
    func finish() { bounds.withLock { $0.end = MonotonicClock.now() } }
    var start: MonotonicInstant? { bounds.withLock { $0.start } }
    var duration: Duration? { bounds.withLock { b in b.start.flatMap { s in b.end.map { $0 - s } } } }
}

/// Reads back every stored report of `directory`.
/// The report files a store keeps in `directory`, as the store itself lists them: a writer's
/// temporary file (named `.sw-tmp-…json` while it is synced, before the rename) is not one, and a
/// test that counted it saw a report twice, once with its old content.
func storedReportPaths(_ directory: String) -> [String] {
    ((try? ReportStore(directory: directory).storedReports()) ?? []).map(\.path)
}

func storedReports(_ directory: String) -> [StallReport] {
    storedReportPaths(directory).compactMap { try? ReportFileReader.read($0) }
}

func temporaryDirectory(_ name: String) -> String {
    let path = NSTemporaryDirectory() + "stallwatch-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// Error allowed on a stall's start and duration: the goal (one sample interval, 50 ms) plus a
/// margin for a loaded 2-core machine, where the watchdog itself may wake late.
let episodeTolerance = Duration.milliseconds(50 + 60)

func milliseconds(_ d: Duration) -> Int64 { d.clampedNanoseconds / 1_000_000 }

/// The report's start within ``episodeTolerance`` of the stall's real start.
func expectStart(of report: StallReport, at start: MonotonicInstant, sourceLocation: SourceLocation = #_sourceLocation) {
    let startError = report.startTimeUnixNanoseconds - MonotonicClock.unixNanoseconds(ofMonotonic: start)
    #expect(abs(startError) <= episodeTolerance.clampedNanoseconds, "start off by \(startError / 1_000_000) ms",
            sourceLocation: sourceLocation)
}

/// The report's duration within ``episodeTolerance`` of the stall's real length.
func expectDuration(of report: StallReport, is duration: Duration, sourceLocation: SourceLocation = #_sourceLocation) {
    let durationError = report.durationNanoseconds - duration.clampedNanoseconds
    #expect(abs(durationError) <= episodeTolerance.clampedNanoseconds,
            "duration \(report.durationNanoseconds / 1_000_000) ms, really \(milliseconds(duration)) ms",
            sourceLocation: sourceLocation)
}

@Suite("Stall episodes", .serialized)
struct EpisodeTests {
    /// Issue 18, defect 1 (on a loop the test drives): one report, one id, final; exact start and duration.
    @Test("a CPU-bound stall whose stack moves: one report with one id, final, start and duration exact")
    func movingStackOnLoop() throws {
        let directory = temporaryDirectory("moving")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(300)),
                                    reportDirectory: directory, metrics: nil) { log.append($0) }
        let probe = watchdog.makeProbe(name: "moving")
        try watchdog.start()
        let timing = StallTiming()
        let worker = TestThread(name: "sw-moving") { _ in
            probe.busy()
            timing.begin()
            episodeFixtureMovingStall(500)
            timing.finish()
            probe.idle()
        }
        worker.stopAndJoin(timeout: .seconds(10))
        #expect(eventually(timeout: .seconds(3)) { !log.ended.isEmpty })
        watchdog.stop()
        let events = log.stalls
        #expect(events.count == 1, "\(events.map { ($0.id, $0.sequenceInStall) })")
        let stored = storedReports(directory).filter { $0.kind == .stall }
        #expect(stored.count == 1, "\(stored.map { ($0.id, $0.sequenceInStall, $0.durationIsFinal) })")
        let report = try #require(stored.first)
        #expect(report.id == events.first?.id)
        #expect(report.durationIsFinal)
        let start = try #require(timing.start), duration = try #require(timing.duration)
        expectStart(of: report, at: start)
        expectDuration(of: report, is: duration)
    }

    /// Issue 18, defect 1 (as a pool job, the issue's case): one report, final, start at the job's start.
    @Test("a CPU-bound pool job whose stack moves: one report with one id, final, start and duration exact")
    func movingStackPoolJob() async throws {
        let directory = temporaryDirectory("moving-job")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(300)),
                                    reportDirectory: directory, metrics: nil) { log.append($0) }
        try watchdog.start()
        try await Task.sleep(for: .milliseconds(200))
        let timing = StallTiming()
        await Task.detached {
            timing.begin()
            episodeFixtureMovingStall(500)
            timing.finish()
        }.value
        try await Task.sleep(for: .milliseconds(400))
        watchdog.stop()
        let events = log.allStalls
        #expect(events.count == 1, "\(events.map { ($0.loopName ?? "", $0.id, $0.sequenceInStall) })")
        let stored = storedReports(directory).filter { $0.kind == .stall }
        #expect(stored.count == 1, "\(stored.map { ($0.id, $0.sequenceInStall, $0.durationIsFinal) })")
        let report = try #require(stored.first)
        #expect(report.loopName == PoolJobWatcher.loopName)
        #expect(report.durationIsFinal)
        let start = try #require(timing.start), duration = try #require(timing.duration)
        expectStart(of: report, at: start)
        expectDuration(of: report, is: duration)
    }

    /// Issue 18, defect 2: a stall at 1.2 × the threshold that begins right after a ping was
    /// answered (the worst phase for a ping) is reported, promptly, with its real length.
    @Test("stalls at 1.2 × the threshold on a ping-probed queue, each right after a ping: all reported in time")
    func nearThresholdAfterPing() throws {
        let threshold = Duration.milliseconds(400)
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: threshold), metrics: nil) { log.append($0) }
        let queue = DispatchQueue(label: "sw-near-threshold")
        let answered = DispatchSemaphore(value: 0)
        let probe = PingProbe(name: "near") { job in
            queue.async {
                job()
                answered.signal()
            }
        }
        watchdog.monitor(probe)
        try watchdog.start()
        defer { watchdog.stop() }
        var starts: [MonotonicInstant] = []
        for _ in 0..<3 {
            while answered.wait(timeout: .now()) == .success {}   // only a ping answered from now on
            _ = answered.wait(timeout: .now() + 2)
            let timing = StallTiming()
            queue.async {
                timing.begin()
                stallwatchFixtureSleep(microseconds: 480_000)
                timing.finish()
            }
            usleep(900_000)
            if let start = timing.start { starts.append(start) }
        }
        #expect(eventually(timeout: .seconds(2)) { log.ended.count >= 3 })
        let reports = log.stalls
        #expect(reports.count == 3, "\(reports.count) of 3 stalls of 480 ms at a 400 ms threshold reported")
        for (report, start) in zip(reports, starts) {
            expectStart(of: report, at: start)
        }
        for ended in log.ended {
            #expect(abs(ended.clampedNanoseconds - Duration.milliseconds(480).clampedNanoseconds)
                    <= episodeTolerance.clampedNanoseconds, "ended after \(ended)")
        }
    }

    /// Issue 18, defect 2, as pool jobs: 1.2 × the threshold, blocked and CPU-bound, at random
    /// phases against the pool scans.
    @Test("pool jobs at 1.2 × the threshold, blocked and CPU-bound: each reported once, start right")
    func nearThresholdPoolJobs() async throws {
        let threshold = Duration.milliseconds(400)
        let log = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: threshold), metrics: nil) { log.append($0) }
        try watchdog.start()
        defer { watchdog.stop() }
        var starts: [MonotonicInstant] = []
        for blocked in [true, false, true, false] {
            try await Task.sleep(for: .milliseconds(Int.random(in: 150...300)))
            let timing = StallTiming()
            await Task.detached {
                timing.begin()
                if blocked { stallwatchFixtureSleep(microseconds: 480_000) } else { stallwatchFixtureCPUStall(milliseconds: 480) }
                timing.finish()
            }.value
            if let start = timing.start { starts.append(start) }
        }
        try await Task.sleep(for: .milliseconds(300))
        let reports = log.allStalls
        #expect(reports.count == 4, "\(reports.map { ($0.loopName ?? "", $0.cause?.kind.rawValue ?? "") })")
        #expect(log.ended.count == 4)
        for (report, start) in zip(reports, starts) {
            expectStart(of: report, at: start)
        }
    }

    @Test("a stall over the rate cap is held back once: one filtered event and one suppression, whatever the round rate")
    func rateCapCountsStallsNotRounds() throws {
        let log = EventLog()
        let configuration = WatchdogConfiguration(threshold: .milliseconds(100), reportCapPerWindow: 1, watchPoolJobs: false)
        let watchdog = try Watchdog(configuration: configuration, metrics: nil) { log.append($0) }
        let probe = watchdog.makeProbe(name: "capped")
        try watchdog.start()
        defer { watchdog.stop() }
        stallOnce(probe, milliseconds: 400, log: log)
        let worker = TestThread(name: "sw-capped") { _ in
            probe.busy()
            stallwatchFixtureCPUStall(milliseconds: 400)
            probe.idle()
        }
        worker.stopAndJoin(timeout: .seconds(10))
        usleep(200_000)
        let filtered = log.events.withLock { events in
            events.compactMap { event -> FilterReason? in event.kind == .filtered ? event.filterReason : nil }
        }
        #expect(log.stalls.count == 1)
        #expect(filtered == [.rateLimited(suppressedSoFar: 1)], "\(filtered)")
    }

    @Test("a stall still running when the watchdog stops: its stored report is final, cut at the stop")
    func finalOnStop() throws {
        let directory = temporaryDirectory("stop")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(200)),
                                    reportDirectory: directory, metrics: nil) { log.append($0) }
        let probe = watchdog.makeProbe(name: "cut")
        try watchdog.start()
        let worker = TestThread(name: "sw-cut") { _ in
            probe.busy()
            stallwatchFixtureCPUStall(milliseconds: 1200)
            probe.idle()
        }
        usleep(600_000)
        watchdog.stop()
        worker.stopAndJoin(timeout: .seconds(5))
        let stored = storedReports(directory).filter { $0.kind == .stall }
        #expect(stored.count == 1)
        let report = try #require(stored.first)
        #expect(report.durationIsFinal)
        #expect(report.duration >= .milliseconds(450) && report.duration <= .milliseconds(900), "\(report.duration)")
    }

    @Test("a feedback-loop report ends final, with its busy period's length")
    func feedbackReportEndsFinal() throws {
        try checkFeedbackReportLength(busyMilliseconds: 300, waitBeforeBusy: 0)
    }

    @Test("a feedback crossing the watchdog takes only after its busy period ended still gets that period's length")
    func feedbackTakenAfterTheBusyPeriod() throws {
        // The first round finds the loop idle and sleeps 0.9 × threshold: the whole busy period
        // falls inside that sleep, so the crossing is taken after the period ended.
        try checkFeedbackReportLength(busyMilliseconds: 100, waitBeforeBusy: 300_000)
    }

    /// A loop crosses a feedback counter's threshold at the start of a busy period of
    /// `busyMilliseconds`: its stored report must end final, as long as the period itself.
    private func checkFeedbackReportLength(busyMilliseconds: Int, waitBeforeBusy: UInt32) throws {
        let directory = temporaryDirectory("feedback-\(busyMilliseconds)")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .seconds(2)), reportDirectory: directory,
                                    metrics: nil)
        let probe = watchdog.makeProbe(name: "render-loop")
        let renders = probe.counter(for: "render", threshold: 10)
        try watchdog.start()
        if waitBeforeBusy > 0 { usleep(waitBeforeBusy) }
        let busyFor = Mutex<Duration>(.zero)
        let worker = TestThread(name: "sw-feedback-final") { _ in
            let clock = ContinuousClock()
            let began = clock.now
            probe.busy()
            for _ in 0..<20 { renders.hit() }
            stallwatchFixtureCPUStall(milliseconds: busyMilliseconds)
            probe.idle()
            busyFor.withLock { $0 = clock.now - began }
        }
        worker.stopAndJoin(timeout: .seconds(5))
        usleep(2_700_000)   // the idle watchdog looks again within 0.9 x threshold
        watchdog.stop()
        let stored = storedReports(directory).filter { $0.kind == .feedbackLoop }
        #expect(stored.count == 1)
        let report = try #require(stored.first)
        #expect(report.durationIsFinal)
        // The busy period as the thread itself timed it (a loaded machine stretches the spin).
        let busy = busyFor.withLock { $0 }
        #expect(report.duration >= busy - .milliseconds(50) && report.duration <= busy + .milliseconds(100),
                "report \(report.duration), busy \(busy)")
    }

    /// Issue 18, defect 3: the round that reports a stall may take a while (it walks every other
    /// thread); a stall that ends meanwhile must not be blamed on what its thread does next.
    @Test("a sleep that ends while its report is made: cause sleeping, not the lock its thread waits on next")
    func causeFromDuringTheStall() throws {
        let threshold = Duration.milliseconds(300)
        // Many blocked threads make the report's walk of other threads take a while.
        let parked = (0..<600).map { _ in TestThread(name: "sw-parked") { t in while !t.shouldStop { usleep(20_000) } } }
        defer { for t in parked { t.stop.store(true, ordering: .releasing) }; for t in parked { t.stopAndJoin() } }
        let log = EventLog()
        let configuration = WatchdogConfiguration(threshold: threshold, threadCountCutoff: 5000, watchPoolJobs: false)
        let watchdog = try Watchdog(configuration: configuration, metrics: nil) { log.append($0) }
        let probe = watchdog.makeProbe(name: "sleeper")
        try watchdog.start()
        defer { watchdog.stop() }
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_mutex_lock(mutex)
        let address = UInt(bitPattern: mutex)
        let worker = TestThread(name: "sw-sleeper") { _ in
            probe.busy()
            stallwatchFixtureSleep(microseconds: 330_000)
            probe.idle()
            stallwatchFixtureLockWait(address)   // after the stall: waits on a lock, idle as a loop
        }
        #expect(eventually(timeout: .seconds(3)) { !log.ended.isEmpty })
        pthread_mutex_unlock(mutex)
        worker.stopAndJoin()
        let report = try #require(log.stalls.first)
        #expect(report.cause?.kind == .sleeping, "\(report.cause?.evidence ?? "")")
    }

    /// Issue 18, defect 4: a single stall without a stack must not claim other stalled loops used
    /// the round's capture time.
    @Test("a single stall with no stack: its evidence does not speak of other stalled loops, and its final report says why it has none")
    func evidenceIsTrue() throws {
        let log = EventLog()
        let directory = temporaryDirectory("no-stack")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(200)), reportDirectory: directory,
                                    metrics: nil) { event in
            log.append(event)
            // A slow listener on the watchdog's thread: the round that sees the stall starts late.
            if event.kind == .feedbackLoop { usleep(25_000) }
        }
        let probe = watchdog.makeProbe(name: "lonely")
        let counters = (0..<10).map { probe.counter(for: "key-\($0)", threshold: 2) }
        try watchdog.start()
        defer { watchdog.stop() }
        let worker = TestThread(name: "sw-lonely") { _ in
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGPROF)
            pthread_sigmask(SIG_BLOCK, &set, nil)   // never sampled: the report has no stack
            probe.busy()
            stallwatchFixtureCPUStall(milliseconds: 120)
            for counter in counters {
                counter.hit()
                counter.hit()
                stallwatchFixtureCPUStall(milliseconds: 40)
            }
            stallwatchFixtureCPUStall(milliseconds: 50)
            probe.idle()
        }
        worker.stopAndJoin(timeout: .seconds(10))
        #expect(eventually(timeout: .seconds(3)) { !log.ended.isEmpty })
        let report = try #require(log.stalls.first)
        #expect(log.stalls.count == 1)
        let evidence = report.cause?.evidence ?? ""
        #expect(evidence.contains("no stack yet"), "\(evidence)")
        #expect(!evidence.contains("other stalled loop"), "\(evidence)")
        // The final report has no sample either: it must not leave the first one's promise standing.
        #expect(eventually(timeout: .seconds(3)) { storedReports(directory).contains { $0.id == report.id && $0.durationIsFinal } })
        let final = try #require(storedReports(directory).first { $0.id == report.id })
        #expect(final.durationIsFinal && final.sampleCount == 0)
        let finalEvidence = final.cause?.evidence ?? ""
        #expect(finalEvidence.contains("no stack ("), "\(finalEvidence)")
        #expect(finalEvidence.contains("no sample was taken before the stall ended"), "\(finalEvidence)")
        #expect(!finalEvidence.contains("the final report holds"), "\(finalEvidence)")
    }
}
