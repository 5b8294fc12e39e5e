import CSampler
import CSamplerTestSupport
import Glibc
import Synchronization
import Testing

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
        for _ in 0..<32 {
            let state = await Task.detached { sw_task_slot_observe() }.value
            if state != 0 { return state }
        }
        return sw_task_slot_state(nil)
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
        #expect(await Self.learnedSlot() == 1)
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

    @Test("nothing is stamped while no watchdog asked for stamps")
    func offByDefault() async throws {
        #expect(sw_pool_wake_install() == 0)
        defer { sw_pool_wake_uninstall() }
        let stamp = await Task.detached { sw_job_stamp_of(sw_test_current_task()) }.value
        #expect(stamp == 0)
    }
}
