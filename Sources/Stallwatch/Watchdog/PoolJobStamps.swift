import CSampler
import StallwatchReport
import Synchronization

/// Dates pool jobs from the stamps the process leaves, not from scans every few milliseconds: the
/// enqueue hook keeps when each job was queued, and a worker's running task is read from outside
/// (no signal, no `/proc` file) through the concurrency runtime's thread-local.
///
/// A worker seen at one look running task T, whose stamp is newer than the previous look of that
/// worker (which saw it elsewhere), began T's job after that stamp: its start is the stamp, however
/// long ago the previous look was. So the pool is looked at a few times a threshold, not every
/// 40 ms, and each job found is woken for at exactly its stamp plus the threshold. A task whose
/// stamp is older than the previous look ran without passing through the global queue since (a
/// task an actor runs in its drain) or waited in the queue across that look: its run is not dated
/// by the stamp, and the worker is watched by its scans as before (``PoolJobWatcher``).
struct PoolJobStamps {
    /// What one look at a worker's running task concludes.
    enum Look: Equatable {
        /// The thread runs no task: outside any job, or between two.
        case outsideAnyTask
        /// The job seen at the previous look still runs.
        case same
        /// A job queued after the previous look: it began at `start`.
        case began(PoolJob, start: MonotonicInstant)
        /// A task whose stamp does not date this run of it.
        case unstamped
    }

    /// The rule, pure: what `task` (0: none), queued at `stamp` (coarse ns, 0: unknown), tells
    /// of a worker whose job was `current` at its previous look at `previousLook`. The coarse clock
    /// reads about one tick (`resolution`) behind (6.5 ms at most at a 4 ms tick, measured on a
    /// 2-vCPU VM): a stamp that close before the previous look may be of a job queued after it,
    /// and the job began no earlier than that look.
    static func conclude(task: UInt64, stamp: UInt64, current: PoolJob?, previousLook: MonotonicInstant?,
                         resolution: UInt64) -> Look {
        guard task != 0 else { return .outsideAnyTask }
        if let seen = current?.stamped, seen.task == task, stamp == 0 || stamp <= seen.queuedAt { return .same }
        guard stamp != 0, let previousLook, stamp &+ resolution >= previousLook.nanoseconds else { return .unstamped }
        // The enqueue came at most one coarse tick after its stamp, and the job began after it;
        // never before the look that saw the thread elsewhere.
        let start = max(MonotonicInstant(nanoseconds: stamp &+ resolution), previousLook)
        return .began(.stamped(task: task, queuedAt: stamp), start: start)
    }

    /// Whether stamps are written and the running task can be read: the hook is Stallwatch's and
    /// the runtime's slot was learned.
    static var isReadable: Bool { sw_task_slot_state(nil) == 1 && sw_pool_wake_is_hooked() != 0 }

    /// Learns the runtime's running-task slot once per process, from two tasks on a thread of
    /// its own (never a pool worker: a process's first pool job is the user's).
    static func learnInBackground() {
        guard !learning.exchange(true, ordering: .relaxed) else { return }
        let executor: ProbeThreadExecutor
        do {
            executor = try ProbeThreadExecutor(name: "sw-slot-probe")
        } catch {
            return
        }
        Task(executorPreference: executor) {
            defer { executor.close() }
            // The second task is a child, so alive while this one is: a task started after this one
            // ended could get its address, and one address proves nothing.
            guard sw_task_slot_observe() == 0 else { return }
            for _ in 0..<4 {
                let state = await Task(executorPreference: executor) { sw_task_slot_observe() }.value
                if state != 0 { return }
            }
        }
    }

    private static let learning = Atomic<Bool>(false)

    /// Why pool jobs cannot be dated by their stamps in this process, once that is settled (`nil`
    /// while the slot is still being learned, or when they can).
    static var unusableReason: String? {
        var why: UnsafePointer<CChar>?
        guard sw_task_slot_state(&why) == -1 else { return nil }
        return why.map { String(cString: $0) } ?? "the running task's slot could not be learned"
    }

    /// Reads the task thread `tid` runs now and its stamp; `nil` when unreadable (the thread
    /// exited, or its thread pointer is stale).
    static func read(_ tid: ThreadID, threadPointer: UInt64) -> (task: UInt64, stamp: UInt64)? {
        var task: UInt64 = 0
        guard sw_thread_running_task(tid.rawValue, threadPointer, &task) == 1 else { return nil }
        return (task, task == 0 ? 0 : sw_job_stamp_of(task))
    }
}
