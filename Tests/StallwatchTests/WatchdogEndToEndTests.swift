import Foundation
import Glibc
import StallwatchPolicy
import StallwatchReport
import Synchronization
import Testing
@testable import Stallwatch

/// Collects a watchdog's events for assertions.
final class EventLog: Sendable {
    let events = Mutex<[WatchdogEvent]>([])
    func append(_ e: WatchdogEvent) { events.withLock { $0.append(e) } }
    /// Stall reports of the loops a test drives itself (pool-job reports left out).
    var stalls: [StallReport] { allStalls.filter { $0.loopName != PoolJobWatcher.loopName } }
    /// Every stall report.
    var allStalls: [StallReport] {
        events.withLock { $0.compactMap { $0.kind == .stall ? $0.report : nil } }
    }
    /// The reports with a sample through a function whose name contains `symbol` (the job a test
    /// drives), and the others. A test process's own pool jobs stall too: Swift Testing writes its
    /// output from them, and once the reader of that output falls behind, `write` blocks them.
    func allStalls(through symbol: String) -> (job: [StallReport], others: [StallReport]) {
        func passes(_ r: StallReport) -> Bool { r.callTree.contains { $0.symbol?.contains(symbol) == true } }
        let all = allStalls
        let (job, others) = (all.filter(passes), all.filter { !passes($0) })
        for r in others {
            print("a stall of another job, not counted: \(r.loopName ?? "") \(r.cause?.kind.rawValue ?? "-") \(r.blamedStack.prefix(10).map { $0.symbol ?? "?" })")
        }
        return (job, others)
    }
    var errors: [String] {
        events.withLock { $0.compactMap { $0.kind == .error ? $0.message : nil } }
    }
    var ended: [Duration] {
        events.withLock { $0.compactMap { $0.kind == .stallEnded ? $0.duration : nil } }
    }
}

extension WatchdogConfiguration {
    /// For tests of loops they drive themselves: the test body blocks its own pool thread while it
    /// waits, which the pool-job watcher would rightly report as well (see PoolJobTests for that).
    static func watchingOwnLoops(threshold: Duration) -> WatchdogConfiguration {
        WatchdogConfiguration(threshold: threshold, watchPoolJobs: false)
    }
}

@Suite("Watchdog end to end", .serialized)
struct WatchdogEndToEndTests {
    static let threshold = Duration.milliseconds(300)

    /// Runs `body` on a loop thread between busy() and idle(), watched by a fresh watchdog, and
    /// returns the events once the stall has ended (or after `timeout`).
    func watch(_ name: String, release: (() -> Void)? = nil, releaseAfter: Duration = .milliseconds(900),
               _ body: @escaping @Sendable () -> Void) throws -> EventLog {
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: Self.threshold)) { log.append($0) }
        let probe = watchdog.makeProbe(name: name)
        try watchdog.start()
        defer { watchdog.stop() }
        let worker = TestThread(name: "sw-e2e") { _ in
            probe.busy()
            body()
            probe.idle()
        }
        if let release {
            usleep(UInt32(releaseAfter / .microseconds(1)))
            release()
        }
        worker.stopAndJoin(timeout: .seconds(10))
        #expect(eventually(timeout: .seconds(2)) { !log.ended.isEmpty })
        return log
    }

    func blamedNames(_ r: StallReport) -> [String] { r.blamedStack.compactMap(\.symbol) }

    @Test("a CPU spin past the threshold: one report, cause CPU-bound, blaming the spinning function")
    func cpuSpin() throws {
        let log = try watch("cpu-loop") { stallwatchFixtureCPUStall(milliseconds: 900) }
        #expect(log.stalls.count == 1, "\(log.stalls.map { blamedNames($0).prefix(3) })")
        let report = try #require(log.stalls.first)
        #expect(report.cause?.kind == .cpuBound, "\(report.cause?.evidence ?? "")")
        #expect(blamedNames(report).contains { $0.contains("stallwatchFixtureCPUStall") }, "\(blamedNames(report))")
        #expect(report.duration >= Self.threshold)
        #expect(report.loopName == "cpu-loop")
        #expect(report.sampleCount >= 1)
        #expect(log.ended.first.map { $0 >= .milliseconds(800) } == true, "ended after \(log.ended)")
        // Every sample has its time, within the stall so far (the first may precede the dated
        // start by the dating's error).
        let times = report.callTree.flatMap { node in node.sampleOffsetsNanoseconds ?? [] }
        #expect(times.count == report.sampleCount, "\(report.callTree.map { ($0.selfCount, $0.sampleOffsetsNanoseconds) })")
        #expect(times.allSatisfy { $0 > -50_000_000 && $0 < report.durationNanoseconds + 50_000_000 },
                "\(times) in \(report.durationNanoseconds)")
    }

    @Test("100 idle extra threads and a CPU spin: CPU-bound, not 'too many threads'")
    func manyIdleThreads() throws {
        let release = DispatchSemaphore(value: 0)
        let idle = (0..<100).map { _ in TestThread(name: "sw-idle") { _ in release.wait() } }
        defer {
            for _ in idle { release.signal() }
            for t in idle { t.stopAndJoin() }
        }
        let log = try watch("busy-loop") { stallwatchFixtureCPUStall(milliseconds: 900) }
        let report = try #require(log.stalls.first)
        #expect(report.threadCount > 100)
        #expect(report.cause?.kind == .cpuBound, "\(report.cause?.evidence ?? "")")
    }

    @Test("a thread waiting on a held mutex: cause lock wait")
    func lockWait() throws {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        defer { mutex.deallocate() }
        pthread_mutex_lock(mutex)
        let address = UInt(bitPattern: mutex)
        let log = try watch("lock-loop", release: { pthread_mutex_unlock(mutex) }) {
            stallwatchFixtureLockWait(address)
        }
        let report = try #require(log.stalls.first)
        #expect(log.stalls.count == 1)
        #expect(report.cause?.kind == .lockWait, "\(report.cause?.evidence ?? "")")
        #expect(blamedNames(report).contains { $0.contains("stallwatchFixtureLockWait") }, "\(blamedNames(report))")
    }

    @Test("a thread blocked reading a socket: cause network I/O")
    func socketRead() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        let readEnd = pair[0], writeEnd = pair[1]
        let log = try watch("socket-loop", release: { _ = write(writeEnd, "x", 1) }) {
            _ = stallwatchFixtureBlockingRead(readEnd)
        }
        let report = try #require(log.stalls.first)
        #expect(log.stalls.count == 1)
        #expect(report.cause?.kind == .networkIO, "\(report.cause?.evidence ?? "")")
        #expect(blamedNames(report).contains { $0.contains("stallwatchFixtureBlockingRead") }, "\(blamedNames(report))")
    }

    @Test("a thread in usleep(3 s): cause sleeping, and the sleep is not shortened")
    func sleeping() throws {
        let slept = Atomic<Int>(0)
        let log = try watch("sleep-loop") {
            let clock = ContinuousClock()
            let start = clock.now
            stallwatchFixtureSleep(microseconds: 3_000_000)
            slept.store(Int((clock.now - start) / .milliseconds(1)), ordering: .releasing)
        }
        let report = try #require(log.stalls.first)
        #expect(log.stalls.count == 1)
        #expect(report.cause?.kind == .sleeping, "\(report.cause?.evidence ?? "")")
        #expect(slept.load(ordering: .acquiring) >= 3000, "the sleep was cut short: \(slept.load(ordering: .acquiring)) ms")
    }

    @Test("a process stopped with SIGSTOP for 3 s, five times, with the default configuration, reports at most one stall")
    func stoppedProcess() throws {
        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("stallwatch").path
        try #require(FileManager.default.isExecutableFile(atPath: exe), "build the stallwatch product first (\(exe))")
        let child = Process()
        child.executableURL = URL(fileURLWithPath: exe)
        // Only the threshold is set, as the README shows: no suspension limit to lean on.
        child.arguments = ["demo", "--scenario", "healthy", "--seconds", "22", "--threshold-ms", "300"]
        let out = Pipe()
        child.standardOutput = out
        child.standardError = FileHandle.nullDevice
        try child.run()
        for _ in 0..<5 {
            usleep(1_000_000)
            kill(child.processIdentifier, SIGSTOP)
            usleep(3_000_000)
            kill(child.processIdentifier, SIGCONT)
        }
        child.waitUntilExit()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(child.terminationStatus == 0)
        // A judge that does not see stops reports all five. One of five was misjudged in 3 of 4
        // fresh-clone CI runs (builds beside the tests): the loop ended its batch while the round
        // that judged the stop ran, and the next round judged that batch without the stop (now
        // kept for it: StallAfterItEndedTests). One is still allowed: the count is printed.
        let stalls = text.components(separatedBy: "\"event\":\"stall\"").count - 1
        print("stopped process: \(stalls) of 5 stops reported as stalls")
        #expect(stalls <= 1, "reported \(stalls) stalls for a stopped process: \(text)")
    }

    @Test("a healthy loop is never reported, and stop() returns promptly")
    func healthyAndPromptStop() throws {
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .seconds(2))) { log.append($0) }
        let probe = watchdog.makeProbe(name: "healthy")
        try watchdog.start()
        for _ in 0..<50 {
            probe.busy()
            usleep(2_000)
            probe.idle()
        }
        let clock = ContinuousClock()
        let start = clock.now
        watchdog.stop()
        #expect(clock.now - start < .milliseconds(200), "stop() waited out a period")
        #expect(log.stalls.isEmpty)
        #expect(!watchdog.isRunning)
    }

    @Test("nonsense configuration is refused with a message naming the field")
    func badConfiguration() {
        #expect(throws: ConfigurationError.self) {
            _ = try Watchdog(configuration: WatchdogConfiguration(threshold: .zero))
        }
        #expect(throws: ConfigurationError.self) {
            _ = try Watchdog(configuration: WatchdogConfiguration(threshold: .seconds(1), sampleInterval: .seconds(-1)))
        }
    }
}

/// One CPU-bound stall of `milliseconds` on a thread of its own, between `busy()` and `idle()`;
/// returns once the thread is gone and the watchdog has said the stall ended.
func stallOnce(_ probe: HeartbeatProbe, milliseconds: Int, log: EventLog) {
    let worker = TestThread(name: "sw-stall") { _ in
        probe.busy()
        stallwatchFixtureCPUStall(milliseconds: milliseconds)
        probe.idle()
    }
    worker.stopAndJoin(timeout: .seconds(10))
    #expect(eventually(timeout: .seconds(2)) { !log.ended.isEmpty })
}

/// Recurses `depth` frames deep, then spins: a deep stall.
@inline(never)
func stallwatchFixtureRecurse(depth: Int, spinMilliseconds: Int) -> Int {
    if depth == 0 {
        stallwatchFixtureCPUStall(milliseconds: spinMilliseconds)
        return 0
    }
    return stallwatchFixtureRecurse(depth: depth - 1, spinMilliseconds: spinMilliseconds) &+ 1
}

@inline(never)
func stallwatchFixtureCPUStall(milliseconds: Int) {
    let clock = ContinuousClock()
    let end = clock.now + .milliseconds(milliseconds)
    var x: UInt64 = 1
    while clock.now < end {
        for _ in 0..<1000 { x = x &* 6364136223846793005 &+ 1 }
    }
    if x == 7 { print("") }
}

@inline(never)
func stallwatchFixtureLockWait(_ address: UInt) {
    guard let mutex = UnsafeMutablePointer<pthread_mutex_t>(bitPattern: address) else { return }
    pthread_mutex_lock(mutex)
    pthread_mutex_unlock(mutex)
}

@inline(never)
func stallwatchFixtureSleep(microseconds: UInt32) {
    usleep(microseconds)
}

@Suite("Ping probes", .serialized)
struct PingProbeTests {
    @Test("a serial queue stuck in a long job is reported through its ping")
    func blockedQueue() throws {
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(300))) { log.append($0) }
        let queue = DispatchQueue(label: "sw-ping-test")
        let probe = PingProbe.dispatchQueue(queue, name: "queue")
        watchdog.monitor(probe)
        try watchdog.start()
        defer { watchdog.stop() }
        usleep(400_000) // a few healthy pings
        #expect(log.stalls.isEmpty)
        queue.async { stallwatchFixtureSleep(microseconds: 1_200_000) }
        #expect(eventually(timeout: .seconds(5)) { !log.ended.isEmpty })
        let report = try #require(log.stalls.first)
        #expect(log.stalls.count == 1)
        #expect(report.loopName == "queue")
        #expect(report.duration >= .milliseconds(300))
        // The queue's worker thread (the one that ran the last ping) is sampled: it sleeps.
        #expect(report.cause?.kind == .sleeping, "\(report.cause?.evidence ?? "")")
        #expect(report.blamedStack.contains { $0.symbol?.contains("stallwatchFixtureSleep") == true },
                "\(report.blamedStack.compactMap(\.symbol).prefix(6))")
    }

    @Test("a healthy concurrency pool answers its pings, and its jobs are not reported")
    func healthyPool() async throws {
        let log = EventLog()
        // Default pool-job watching on: the test awaits instead of blocking its pool thread.
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(300))) { log.append($0) }
        let probe = PingProbe.cooperativePool()
        watchdog.monitor(probe)
        try watchdog.start()
        defer { watchdog.stop() }
        try await Task.sleep(for: .milliseconds(700))
        #expect(log.stalls.isEmpty)
        #expect(probe.lastLatency < .milliseconds(300))
    }
}

@Suite("Watchdog report delivery", .serialized)
struct WatchdogDeliveryTests {
    @Test("a watchdog stopped from its own event handler and then released still writes its final report")
    func stoppedFromHandlerAndReleased() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sw-handler-stop-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let holder = Mutex<Watchdog?>(nil)
        let released = DispatchSemaphore(value: 0)
        final class ReleaseSignal: Sendable {
            let semaphore: DispatchSemaphore
            init(_ semaphore: DispatchSemaphore) { self.semaphore = semaphore }
            deinit { semaphore.signal() }
        }
        let probe: HeartbeatProbe
        do {
            let signal = ReleaseSignal(released)
            let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(200)), reportDirectory: dir) { event in
                _ = signal  // released with the handler, so with the watchdog
                // The first report of a stall still in progress: stopping now cuts it short, and
                // its final report is the last thing the watchdog submits.
                if event.kind == .stall { holder.withLock { $0 }?.stop() }
            }
            holder.withLock { $0 = watchdog }
            probe = watchdog.makeProbe(name: "handler-stop")
            try watchdog.start()
        }
        let worker = TestThread(name: "sw-handler-stop") { _ in
            probe.busy()
            stallwatchFixtureSleep(microseconds: 700_000)
            probe.idle()
        }
        #expect(eventually(timeout: .seconds(3)) { holder.withLock { $0?.isRunning == false } })
        holder.withLock { $0 = nil }  // the last reference but the ending thread's
        #expect(released.wait(timeout: .now() + 5) == .success, "the watchdog was released")
        worker.stopAndJoin()
        let stored = try ReportStore(directory: dir).storedReports()
        #expect(stored.count == 1, "\(stored)")
        let isFinal = try ReportFileReader.read(try #require(stored.first).path).durationIsFinal
        #expect(isFinal, "the cut-short stall's final report reached the disk")
    }

    @Test("an unwritable report directory gives an error event, and the stall event is still delivered")
    func unwritableDirectory() throws {
        // A path under a regular file cannot be created, even by root.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sw-not-a-dir-\(getpid())")
        try Data("x".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let errors = Mutex<[String]>([])
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(200)),
                                    reportDirectory: file.appendingPathComponent("reports").path) { event in
            if event.kind == .error, let message = event.message { errors.withLock { $0.append(message) } }
            log.append(event)
        }
        let probe = watchdog.makeProbe(name: "io-loop")
        try watchdog.start()
        defer { watchdog.stop() }
        let worker = TestThread(name: "sw-deliver") { _ in
            probe.busy()
            stallwatchFixtureSleep(microseconds: 500_000)
            probe.idle()
        }
        worker.stopAndJoin()
        #expect(eventually { !log.ended.isEmpty })
        #expect(log.stalls.count == 1)
        // Two writes of one report fail: the first, and its update with the final duration.
        let id = try #require(log.stalls.first?.id)
        #expect(eventually { errors.withLock { $0.count } == 2 })
        #expect(errors.withLock { $0.allSatisfy { $0.contains("reports") && $0.contains(id) } }, "\(errors.withLock { $0 })")
    }

    @Test("reports land in the directory as owner-only JSON that decodes back")
    func writtenReports() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sw-reports-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(200)),
                                    reportDirectory: dir.path) { log.append($0) }
        let probe = watchdog.makeProbe(name: "disk-loop")
        try watchdog.start()
        defer { watchdog.stop() }
        let worker = TestThread(name: "sw-written") { _ in
            probe.busy()
            stallwatchFixtureCPUStall(milliseconds: 500)
            probe.idle()
        }
        worker.stopAndJoin()
        #expect(eventually { !log.ended.isEmpty })
        watchdog.stop() // flushes the report writer
        // One file per reported stall event (a follow-up the back-off lets through is a report of
        // its own), nothing else, each owner-only and decoding to the event's report.
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".json") }
        #expect(!log.stalls.isEmpty)
        #expect(files.count == log.stalls.count, "\(files) events: \(log.stalls.map { ($0.kind, $0.sequenceInStall, $0.blamedStack.compactMap(\.symbol).prefix(4)) })")
        var ids: Set<String> = []
        for file in files {
            let path = dir.appendingPathComponent(file).path
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            let report = try JSONDecoder().decode(StallReport.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(report.loopName == "disk-loop")
            ids.insert(report.id)
        }
        #expect(ids == Set(log.stalls.map(\.id)))
    }

    @Test("a stall 2 000 frames deep is written, and stallwatch show renders it")
    func deepRecursion() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sw-deep-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = EventLog()
        var configuration = WatchdogConfiguration.watchingOwnLoops(threshold: .milliseconds(300))
        configuration.maxFrames = 256 // the most a sample holds: a nested call tree this deep broke JSON
        let watchdog = try Watchdog(configuration: configuration, reportDirectory: dir.path) { log.append($0) }
        let probe = watchdog.makeProbe(name: "deep-loop")
        try watchdog.start()
        let worker = TestThread(name: "sw-deep") { _ in
            probe.busy()
            _ = stallwatchFixtureRecurse(depth: 2000, spinMilliseconds: 900)
            probe.idle()
        }
        worker.stopAndJoin(timeout: .seconds(10))
        #expect(eventually(timeout: .seconds(2)) { !log.ended.isEmpty })
        watchdog.stop()
        #expect(log.errors.isEmpty, "\(log.errors)")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".json") }
        let path = dir.appendingPathComponent(try #require(files.first, "no report written")).path
        let report = try JSONDecoder().decode(StallReport.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(report.truncatedSampleCount > 0)
        #expect(report.callTree.count >= 200)

        let exe = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("stallwatch").path
        let show = Process()
        show.executableURL = URL(fileURLWithPath: exe)
        show.arguments = ["show", path]
        let out = Pipe()
        show.standardOutput = out
        try show.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        show.waitUntilExit()
        #expect(show.terminationStatus == 0)
        #expect(text.contains("stallwatchFixtureRecurse"), "\(text.prefix(600))")
        #expect(text.contains("with outer frames missing (frameLimit "), "\(text.prefix(600))")
        #expect(report.stackEnds?["frameLimit"] == report.truncatedSampleCount)
    }

    @Test("the stored report of a 2 s stall says about 2 s, and is final")
    func storedReportHasFinalDuration() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sw-final-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: dir) }
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(500)),
                                    reportDirectory: dir.path) { log.append($0) }
        let probe = watchdog.makeProbe(name: "slow-loop")
        try watchdog.start()
        stallOnce(probe, milliseconds: 2000, log: log)
        watchdog.stop() // flushes the report writer
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".json") }
        let reports = try files.map {
            try JSONDecoder().decode(StallReport.self, from: Data(contentsOf: dir.appendingPathComponent($0)))
        }
        // The stall's first report, rewritten in place (a follow-up, if any, is a file of its own).
        let report = try #require(reports.first { $0.id == log.stalls.first?.id }, "\(files)")
        #expect(report.durationIsFinal)
        #expect(report.duration >= .milliseconds(1900) && report.duration <= .milliseconds(2600), "\(report.duration)")
        #expect(report.sampleCount > (log.stalls.first?.sampleCount ?? 0), "the final report holds the later samples too")
        #expect(report.id == log.stalls.first?.id)
    }
}
