import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Stallwatch

/// The cooperative pool's probe looks at the pool's workers instead of pinging while one of them
/// waits for work: an idle pool is not woken 25 times a second, and a starved one is still reported.
@Suite("Cooperative pool looked at, not pinged", .serialized)
struct PoolLookTests {
    static let threshold = Duration.milliseconds(300)

    /// A watchdog with pool-job watching on (the default) and the pool's probe, past its first
    /// ping (which names the pool's workers) and a few idle rounds.
    func watch(_ body: (PingProbe, Watchdog, EventLog) async throws -> Void) async throws {
        let log = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: Self.threshold)) { log.append($0) }
        let probe = PingProbe.cooperativePool()
        watchdog.monitor(probe)
        try watchdog.start()
        defer { watchdog.stop() }
        try await Task.sleep(for: .milliseconds(400))
        try await body(probe, watchdog, log)
    }

    /// The watchdog's counts of its looks at the pool (all zero before its thread watches the pool).
    private func counts(_ probe: PingProbe, _ watchdog: Watchdog) -> LookCounters.Snapshot {
        watchdog.lookCounts(of: probe) ?? LookCounters.Snapshot(looks: 0, cpuClockReads: 0, procReads: 0, busy: 0, pings: 0)
    }

    @Test("an idle pool gets looks, not pings")
    func idlePool() async throws {
        try await watch { probe, watchdog, log in
            // The first scans symbolize each worker's wait once; under ASan that indexes the test
            // binary's symbols (its interceptors are on the stack) and takes a while.
            let deadline = ContinuousClock.now + .seconds(15)
            while counts(probe, watchdog).looks == 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            let before = counts(probe, watchdog)
            try await Task.sleep(for: .seconds(1))
            let after = counts(probe, watchdog)
            // A ping every 40 ms would be 25; the test's own awaits may catch a worker away once or twice.
            // Looks: every 40 ms while the pool is scanned, one per late scan while it rests (PoolRest).
            #expect(after.pings - before.pings <= 3, "\(before) → \(after)")
            #expect(after.looks - before.looks >= 1, "\(before) → \(after)")
            #expect(log.stalls.isEmpty)
        }
    }

    /// Every worker of the pool blocked in Swift jobs until one deadline (as many jobs as the
    /// pool has workers: libdispatch adds one beyond the CPU count when all of them stay blocked
    /// about a second, and keeps it a while): the pool starves, and its probe must say so.
    @Test("a pool whose every worker blocks is reported once, blaming a blocked job")
    func starvedPool() async throws {
        try await watch { probe, watchdog, log in
            let pingsBefore = counts(probe, watchdog).pings
            let count = max(ProcessInfo.processInfo.activeProcessorCount, Self.workers(named: "oot.default-qos").count, 1)
            let deadline = ContinuousClock.now + .milliseconds(900)
            let jobs = (0..<count).map { _ in
                Task.detached { poolFixtureBlockingSleep(milliseconds: Int(max(deadline - ContinuousClock.now, .zero) / .milliseconds(1))) }
            }
            for job in jobs { await job.value }
            #expect(eventually(timeout: .seconds(2)) { log.ended.count >= 1 })
            try await Task.sleep(for: .milliseconds(200))
            let reports = log.stalls.filter { $0.loopName == probe.name }
            #expect(Set(reports.map(\.id)).count == 1, "\(reports.map { ($0.id, $0.duration) })")
            #expect(counts(probe, watchdog).pings > pingsBefore, "the busy pool was pinged")
            let last = try #require(reports.last)
            #expect(last.blamedStack.contains { $0.symbol?.contains("poolFixtureBlockingSleep") == true },
                    "\(last.blamedStack.compactMap(\.symbol).prefix(10))")
            // Ping-timed: the start is within one ping period (40 ms) of the blocking, the end within a round.
            let ended = log.events.withLock { $0.first { $0.kind == .stallEnded && $0.loop == probe.name }?.duration }
            let duration = try #require(ended)
            #expect(duration >= .milliseconds(800) && duration <= .milliseconds(1000), "\(duration), \(count) jobs")
        }
    }

    /// The classic pool deadlock: every worker's job waits in `DispatchSemaphore.wait()` for a
    /// signal only a job could send (here a plain thread sends it after a while). One report of
    /// the pool lists each blocked job with its stack and cause, and each job has one report of its own.
    @Test("a pool deadlocked on a semaphore: one pool report listing every blocked job, one report per job")
    func deadlockedPoolListsItsJobs() async throws {
        try await watch { probe, watchdog, log in
            let count = max(ProcessInfo.processInfo.activeProcessorCount, Self.workers(named: "oot.default-qos").count, 1)
            let gate = DispatchSemaphore(value: 0)
            let jobs = (0..<count).map { _ in Task.detached(priority: .medium) { poolFixtureWaitForSignal(gate) } }
            let rescuer = TestThread(name: "sw-rescuer") { _ in
                usleep(1_200_000)
                for _ in 0..<count { gate.signal() }
            }
            for job in jobs { await job.value }
            rescuer.stopAndJoin()
            // Awaited, not polled: a poll would block a worker itself (and be reported as a job).
            for _ in 0..<40 where !log.events.withLock({ $0.contains { $0.kind == .stallEnded && $0.loop == probe.name } }) {
                try await Task.sleep(for: .milliseconds(50))
            }
            try await Task.sleep(for: .milliseconds(200))
            let pool = log.stalls.filter { $0.loopName == probe.name }
            #expect(Set(pool.map(\.id)).count == 1, "\(pool.map { ($0.id, $0.duration) }); \(log.events.withLock { $0.map(\.jsonLine) })")
            // The jobs that got a worker (the rest waited in the queue, as the ping did).
            let jobReports = log.allStalls.filter {
                $0.loopName == PoolJobWatcher.loopName
                    && $0.blamedStack.contains { $0.symbol?.contains("poolFixtureWaitForSignal") == true }
            }
            let jobThreads = jobReports.compactMap { $0.thread?.id }
            #expect(!jobReports.isEmpty)
            #expect(Set(jobThreads).count == jobThreads.count, "a job reported twice: \(jobReports.map { ($0.id, $0.thread?.id ?? 0) })")
            let listed = try #require(pool.first?.poolJobs, "the pool's report lists no job")
            #expect(Set(listed.map(\.thread.id)) == Set(jobThreads), "\(listed.map(\.thread.id)) vs \(jobThreads)")
            for job in listed {
                #expect(job.frames.contains { $0.symbol?.contains("poolFixtureWaitForSignal") == true },
                        "\(job.thread.id): \(job.frames.compactMap(\.symbol).prefix(8))")
                #expect(job.cause?.kind == .lockWait, "\(job.thread.id): \(String(describing: job.cause))")
                #expect(job.reportID.map { id in jobReports.contains { $0.id == id } } == true)
            }
        }
    }

    /// A `DispatchQueue.global()` block runs on the same workers as Swift jobs, outside any job:
    /// blocked in it, a worker is away, not waiting for work, though no `swift_job_run` is on its stack.
    @Test("a worker blocked in a dispatch block is not taken for one waiting for work")
    func workerInDispatchBlock() throws {
        let watcher = PoolJobWatcher(sampler: try StackSampler(), symbolizer: .shared)
        try #require(watcher.isAvailable)
        let blocked = Atomic<Int32>(0)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            blocked.store(ThreadID.current.rawValue, ordering: .relaxed)
            stallwatchFixtureSleep(microseconds: 600_000)
            done.signal()
        }
        #expect(eventually(timeout: .seconds(1)) { blocked.load(ordering: .relaxed) != 0 })
        usleep(20_000)
        // Two scans: the first learns each worker's wait, the second reads it back.
        _ = watcher.scan(now: MonotonicClock.now())
        _ = watcher.scan(now: MonotonicClock.now())
        let tid = ThreadID(rawValue: blocked.load(ordering: .relaxed))
        #expect(watcher.waitsForWork(tid) == false)
        done.wait()
        usleep(20_000)
        _ = watcher.scan(now: MonotonicClock.now())
        _ = watcher.scan(now: MonotonicClock.now())
        #expect(watcher.waitsForWork(tid) == true, "back in its wait for work after the block")
    }

    @Test("a pool whose threads cannot be listed is said once in an error note, and again after a listing succeeded")
    func unlistedPoolIsSaid() throws {
        let failing = Atomic<Bool>(true)
        let roster = ThreadRoster(maximumAge: .zero) { (threads: inout [ThreadID]) throws(ThreadError) in
            if failing.load(ordering: .relaxed) { throw ThreadError.system(operation: "listing /proc/self/task", errno: EMFILE) }
            try ThreadList.current(into: &threads)
        }
        let watcher = PoolJobWatcher(sampler: try StackSampler(), symbolizer: .shared, roster: roster)
        try #require(watcher.isAvailable)
        _ = watcher.scan(now: MonotonicClock.now())
        _ = watcher.scan(now: MonotonicClock.now())
        let notes = watcher.takeUnwatchedNotes()
        #expect(notes.count == 1, "\(notes)")
        #expect(notes.first?.hasPrefix("pool workers cannot be listed (listing /proc/self/task failed:") == true, "\(notes)")
        failing.store(false, ordering: .relaxed)
        _ = watcher.scan(now: MonotonicClock.now())
        #expect(watcher.takeUnwatchedNotes().allSatisfy { !$0.hasPrefix("pool workers cannot be listed") })
        failing.store(true, ordering: .relaxed)
        _ = watcher.scan(now: MonotonicClock.now())
        #expect(watcher.takeUnwatchedNotes().filter { $0.hasPrefix("pool workers cannot be listed") }.count == 1)
    }

    @Test("a busy thread started from async code, named like a worker by inheritance, is not watched as one")
    func inheritedWorkerName() async throws {
        let watcher = PoolJobWatcher(sampler: try StackSampler(), symbolizer: .shared)
        try #require(watcher.isAvailable)
        // Linux gives a new thread its creator's name: one started from a job is `oot.default-qos`.
        let spinner = await Task.detached { TestThread(name: "sw-inherited") { _ = stallwatchFixtureLeafSpin($0) } }.value
        defer { spinner.stopAndJoin() }
        let tid = try #require(spinner.tid)
        let name = try ThreadInfo.read(tid).name
        try #require(name.hasSuffix("-qos"), "the premise: the thread inherited a worker's name (\(name))")
        for _ in 0..<4 {
            _ = watcher.scan(now: MonotonicClock.now())
            usleep(30_000)
        }
        // Taken for a worker, it would be known (busy, not waiting for work) and signalled each scan.
        #expect(watcher.waitsForWork(tid) == nil, "still watched as a pool worker")
    }

    /// A job blocked in one wait for long costs a CPU-clock read per scan, not two `/proc` reads:
    /// a thread whose clock has not moved has not run, so it is still where the last scan found it.
    @Test("a pool job blocked for long is scanned by its CPU clock, not its /proc files")
    func blockedJobScannedByClock() throws {
        let sampler = try StackSampler()
        try #require(PoolJobWatcher(sampler: sampler, symbolizer: .shared).isAvailable)
        let job = Task.detached { poolFixtureBlockingSleep(milliseconds: 900) }
        _ = job
        let result = Mutex<(inJob: Bool, stillInJob: Bool, reads: UInt64)>((false, false, 0))
        let done = DispatchSemaphore(value: 0)
        // Scanned from a thread of its own, while the test's pool thread waits for it: every
        // other worker then either waits for work or is blocked where it was.
        let scanner = TestThread(name: "sw-scanner") { _ in
            let watcher = PoolJobWatcher(sampler: sampler, symbolizer: .shared)
            usleep(50_000)
            // Learn every worker's wait, and let every thread the first scan listed settle (a
            // young thread's name is read at each scan, see `PoolOtherThread`).
            for _ in 0..<max(3, PoolOtherThread.youngScans + 1) {
                _ = watcher.scan(now: MonotonicClock.now(), maySignal: false)
                usleep(20_000)
            }
            let inJob = watcher.anyInJob
            let before = PoolScanCost.counts
            for _ in 0..<10 {
                _ = watcher.scan(now: MonotonicClock.now(), maySignal: false)
                usleep(20_000)
            }
            let after = PoolScanCost.counts
            result.withLock { $0 = (inJob, watcher.anyInJob, after.procReads - before.procReads) }
            done.signal()
        }
        done.wait()  // blocked in one wait, not polling as a join does
        scanner.stopAndJoin()
        let r = result.withLock { $0 }
        #expect(r.inJob, "the blocked job was seen")
        #expect(r.stillInJob, "and still in its job")
        // One thread listing per scan; the blocked worker's syscall and schedstat reads would be 20 more.
        #expect(r.reads <= 10 + 4, "\(r.reads) /proc reads in 10 scans")
    }

    static func workers(named name: String) -> [String] {
        let tids = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tids.filter { tid in
            (try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8))?.hasPrefix(name) == true
        }
    }
}

@inline(never)
func poolFixtureWaitForSignal(_ gate: DispatchSemaphore) {
    gate.wait()
}
