import CSampler
import CSamplerTestSupport
import Glibc
import Synchronization
import StallwatchReport
import Testing
@testable import Stallwatch

/// The stamps that date a pool job without scanning: the enqueue instant the hook keeps per job, and
/// the task a pool thread runs, read from outside through the runtime's thread-local.
@Suite("Job stamps", .serialized)
struct JobStampsTests {
    private static func monotonicNanoseconds() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }

    /// Learns the running task's slot from tasks on the pool, as the watchdog does at start.
    private static func learnedSlot() async -> Int32 {
        sw_thread_layout_observe()
        return await Task.detached {
            // A child task is alive beside its parent: their addresses differ.
            _ = sw_task_slot_observe()
            for _ in 0..<4 {
                let state = await Task { sw_task_slot_observe() }.value
                if state != 0 { return state }
            }
            return sw_task_slot_state(nil)
        }.value
    }

    /// What a job tells of itself while it runs.
    private struct Seen: Sendable {
        var tid: Int32 = 0
        var task: UInt64 = 0
        var threadPointer: UInt64 = 0
        var startedAt: UInt64 = 0
    }

    @Test("a running job's task and enqueue stamp are read from outside, without a signal")
    func runningJobIsReadFromOutside() async throws {
        let learned = await Self.learnedSlot()
        var why: UnsafePointer<CChar>?
        _ = sw_task_slot_state(&why)
        #expect(learned == 1, "\(why.map { String(cString: $0) } ?? "")")
        #expect(sw_pool_wake_install() == 0)
        sw_job_stamps_enable(1)
        defer {
            sw_job_stamps_enable(0)
            sw_pool_wake_uninstall()
        }
        let seen = Mutex(Seen())
        let release = Atomic<Bool>(false)
        let queuedAt = Self.monotonicNanoseconds()
        let job = Task.detached {
            seen.withLock {
                $0 = Seen(tid: sw_current_tid(), task: sw_test_current_task(), threadPointer: sw_test_thread_pointer(),
                          startedAt: Self.monotonicNanoseconds())
            }
            // Blocked in a system call inside the job: the thread's stack pointer is readable then.
            while !release.load(ordering: .acquiring) { usleep(20_000) }
        }
        var job0 = Seen()
        for _ in 0..<500 where job0.tid == 0 {
            usleep(2_000)
            job0 = seen.withLock { $0 }
        }
        try #require(job0.tid != 0 && job0.task != 0)

        var call = sw_thread_syscall_t()
        for _ in 0..<100 {
            if sw_thread_syscall(job0.tid, &call) == 0, call.nr >= 0 { break }
            usleep(1_000)
        }
        #expect(sw_thread_pointer_from_stack(job0.tid, call.sp) == job0.threadPointer)
        #expect(sw_thread_pointer_from_stack(job0.tid &+ 1, call.sp) == 0, "a descriptor that names another thread")

        var running: UInt64 = 0
        #expect(sw_thread_running_task(job0.tid, job0.threadPointer, &running) == 1)
        #expect(running == job0.task)
        // Queued before it started, no earlier than just before `Task.detached` (the coarse clock
        // lags CLOCK_MONOTONIC by up to one scheduler tick: 10 ms at HZ=100).
        let stamp = sw_job_stamp_of(job0.task)
        #expect(stamp != 0)
        #expect(stamp <= job0.startedAt)
        #expect(stamp + 10_000_000 >= queuedAt)

        release.store(true, ordering: .releasing)
        await job.value
        // The job ended: the thread runs another task or none, never the ended one.
        running = 0
        if sw_thread_running_task(job0.tid, job0.threadPointer, &running) == 1 {
            #expect(running != job0.task)
        }
    }

    @Test("a job queued again is stamped again; an unknown job has no stamp")
    func stampsFollowEnqueues() async throws {
        #expect(sw_pool_wake_install() == 0)
        sw_job_stamps_enable(1)
        defer {
            sw_job_stamps_enable(0)
            sw_pool_wake_uninstall()
        }
        let task = Mutex<UInt64>(0)
        let stamps = await Task.detached { () -> [UInt64] in
            var stamps: [UInt64] = []
            task.withLock { $0 = sw_test_current_task() }
            let me = sw_test_current_task()
            for _ in 0..<3 {
                stamps.append(sw_job_stamp_of(me))
                // Suspends, then is queued on the pool again when the sleep ends.
                try? await Task.sleep(for: .milliseconds(30))
            }
            stamps.append(sw_job_stamp_of(me))
            return stamps
        }.value
        #expect(stamps.allSatisfy { $0 != 0 })
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 + 20_000_000 <= $1 }, "each resume stamped anew: \(stamps)")
        #expect(sw_job_stamp_of(0) == 0)
        #expect(sw_job_stamp_of(task.withLock { $0 } ^ 0x10) == 0)
    }

    @Test("a watchdog asks for stamps while it runs, and no longer once stopped")
    func stampsStopWithTheWatchdog() async throws {
        let before = sw_job_stamps_enabled()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(300)), metrics: nil) { _ in }
        try watchdog.start()
        // Its engine is made on its own thread.
        for _ in 0..<200 where sw_job_stamps_enabled() == before { try await Task.sleep(for: .milliseconds(5)) }
        #expect(sw_job_stamps_enabled() == before + 1)
        watchdog.stop()
        #expect(sw_job_stamps_enabled() == before)
        // Stopping twice gives nothing back twice.
        watchdog.stop()
        #expect(sw_job_stamps_enabled() == before)
    }
}

/// The rule that turns a look at a worker's running task into a job's start.
@Suite("Job stamps' rule")
struct PoolJobStampsRuleTests {
    private let tick: UInt64 = 4_000_000
    private func at(_ ms: UInt64) -> MonotonicInstant { MonotonicInstant(nanoseconds: 1_000_000_000 + ms * 1_000_000) }
    private func ns(_ ms: UInt64) -> UInt64 { at(ms).nanoseconds }

    @Test("no task: outside any job")
    func noTask() {
        #expect(PoolJobStamps.conclude(task: 0, stamp: 0, current: nil, previousLook: at(0), resolution: tick) == .outsideAnyTask)
        let current = PoolJob.stamped(task: 0x1000, queuedAt: ns(5))
        #expect(PoolJobStamps.conclude(task: 0, stamp: 0, current: current, previousLook: at(10), resolution: tick) == .outsideAnyTask)
    }

    @Test("a task queued after the previous look began at its stamp, one coarse tick on")
    func stampedAfterLook() {
        let look = PoolJobStamps.conclude(task: 0x2000, stamp: ns(130), current: nil, previousLook: at(100), resolution: tick)
        #expect(look == .began(.stamped(task: 0x2000, queuedAt: ns(130)), start: at(134)))
    }

    @Test("a stamp within a coarse tick before the look: the job began no earlier than the look")
    func stampJustBeforeLook() {
        let look = PoolJobStamps.conclude(task: 0x2000, stamp: ns(98), current: nil, previousLook: at(100), resolution: tick)
        #expect(look == .began(.stamped(task: 0x2000, queuedAt: ns(98)), start: at(102)))
        let atLook = PoolJobStamps.conclude(task: 0x2000, stamp: ns(100), current: nil, previousLook: at(104), resolution: tick)
        #expect(atLook == .began(.stamped(task: 0x2000, queuedAt: ns(100)), start: at(104)))
        let beyond = PoolJobStamps.conclude(task: 0x2000, stamp: ns(99), current: nil, previousLook: at(104), resolution: tick)
        #expect(beyond == .unstamped)
    }

    @Test("a stamp older than the previous look does not date this run; neither does a missing one")
    func staleOrMissing() {
        #expect(PoolJobStamps.conclude(task: 0x2000, stamp: ns(50), current: nil, previousLook: at(100), resolution: tick) == .unstamped)
        #expect(PoolJobStamps.conclude(task: 0x2000, stamp: 0, current: nil, previousLook: at(100), resolution: tick) == .unstamped)
        // No previous look: nothing bounds the run's start.
        #expect(PoolJobStamps.conclude(task: 0x2000, stamp: ns(150), current: nil, previousLook: nil, resolution: tick) == .unstamped)
    }

    @Test("the same task with the same stamp is the same job; queued again, it is a new one")
    func sameOrRequeued() {
        let current = PoolJob.stamped(task: 0x3000, queuedAt: ns(10))
        #expect(PoolJobStamps.conclude(task: 0x3000, stamp: ns(10), current: current, previousLook: at(100), resolution: tick) == .same)
        // Its entry overwritten by another job's: still the run seen before.
        #expect(PoolJobStamps.conclude(task: 0x3000, stamp: 0, current: current, previousLook: at(100), resolution: tick) == .same)
        let again = PoolJobStamps.conclude(task: 0x3000, stamp: ns(120), current: current, previousLook: at(100), resolution: tick)
        #expect(again == .began(.stamped(task: 0x3000, queuedAt: ns(120)), start: at(124)))
    }

    @Test("another task than the job seen: a new job, never the same")
    func anotherTask() {
        let current = PoolJob.stamped(task: 0x3000, queuedAt: ns(10))
        let look = PoolJobStamps.conclude(task: 0x4000, stamp: ns(10), current: current, previousLook: at(5), resolution: tick)
        #expect(look == .began(.stamped(task: 0x4000, queuedAt: ns(10)), start: at(14)))
        #expect(!PoolJob.stamped(task: 0x4000, queuedAt: ns(10)).isSame(as: current))
        #expect(!PoolJob.stamped(task: 0x3000, queuedAt: ns(10)).isUnwalked)
    }
}

/// A watchdog dates a pool job from its enqueue stamp: the report starts one coarse clock tick after
/// the stamp (when the enqueue happened at the latest, give or take the coarse clock's lag), or at
/// the look that last saw the worker elsewhere if that came later, and never after the job began —
/// by construction, however loaded the machine (a scan-dated start was anywhere within a scan period).
@Suite("Pool jobs dated by their stamps", .serialized)
struct PoolJobStampDatingTests {
    private static func nanoseconds(_ clock: clockid_t) -> Int64 {
        var t = timespec()
        clock_gettime(clock, &t)
        return Int64(t.tv_sec) * 1_000_000_000 + Int64(t.tv_nsec)
    }

    @Test("a pool job's report starts at its stamp", arguments: ["cpu", "blocked"])
    func reportStartsAtStamp(kind: String) async throws {
        let log = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(300)), metrics: nil) { log.append($0) }
        try watchdog.start()
        defer { watchdog.stop() }
        // The first scans find the idle workers blocked in their wait: their thread pointers.
        try await Task.sleep(for: .milliseconds(400))
        try #require(PoolJobStamps.isReadable)
        let stampedBefore = PoolScanCost.counts.stampedJobs
        let seen = Mutex<(stamp: Int64, started: Int64)>((0, 0))
        await Task.detached {
            seen.withLock { $0 = (Int64(sw_job_stamp_of(sw_test_current_task())), Self.nanoseconds(CLOCK_MONOTONIC)) }
            if kind == "blocked" { poolFixtureBlockingSleep(milliseconds: 700) } else { _ = poolFixtureSpin(milliseconds: 700) }
        }.value
        try await Task.sleep(for: .milliseconds(300))
        let reports = log.allStalls.filter { $0.loopName == PoolJobWatcher.loopName }
        #expect(reports.count == 1, "\(reports.count) pool-job reports")
        let report = try #require(reports.first)
        #expect(PoolScanCost.counts.stampedJobs > stampedBefore, "dated by a scan, not by its stamp")
        let job = seen.withLock { $0 }
        try #require(job.stamp != 0)
        // The report's start in monotonic time (1 ms for reading the two clocks apart).
        let start = report.startTimeUnixNanoseconds - (Self.nanoseconds(CLOCK_REALTIME) - Self.nanoseconds(CLOCK_MONOTONIC))
        let slack: Int64 = 1_000_000
        let fromStamp = job.stamp + Int64(MonotonicClock.coarseResolution)
        #expect(start >= fromStamp - slack, "\(Double(fromStamp - start) / 1e6) ms before its stamp")
        #expect(start <= max(fromStamp, job.started) + slack, "\(Double(start - job.started) / 1e6) ms after the job began")
    }
}
