import CSampler
import StallwatchPolicy

/// Which job a Swift concurrency pool thread is running, told from its stack alone.
///
/// Every job on the cooperative pool runs under the runtime's `swift_job_run`; what the job itself
/// runs sits just inside that frame. A job is identified by the function it entered from
/// `swift_job_run` (the task's partial function: the async handler's own code) and the return
/// addresses from `swift_job_run` outwards, and by the request it serves when the capture read one
/// (``CapturedStack/requestTag``). The same identity seen in two scans means the thread has not
/// left that job in between, unless two jobs of the same function for the same request (or with no
/// request tag: a service without ``StallAttribution``) ran back to back with no scan seeing the
/// thread elsewhere — a limit of watching from outside without runtime hooks. Under steady load a
/// blocking route handler runs back to back for request after request on one worker; without the
/// request in the identity they made one long stall.
struct PoolJob: Hashable {
    /// Entry of the job's first function (the partial function `swift_job_run` called).
    var rootFunction: UInt
    /// Return addresses from `swift_job_run` to the thread's outermost frame.
    var outerFrames: [UInt]
    /// The request the job serves, when the capture read its tag.
    var request: UInt64? = nil
    /// The task the job runs and when it was queued (``PoolJobStamps``), for a job told by its
    /// stamps rather than by its stack.
    var stamped: (task: UInt64, queuedAt: UInt64)? = nil

    /// Whether `other` may be this job seen again: the same code, and not another request's (a
    /// capture without a tag proves nothing about the request).
    func isSame(as other: PoolJob?) -> Bool {
        if let stamped, let theirs = other?.stamped { return stamped == theirs }
        guard let other, (stamped == nil) == (other.stamped == nil), rootFunction == other.rootFunction, outerFrames == other.outerFrames else { return false }
        guard let request, let otherRequest = other.request else { return true }
        return request == otherRequest
    }

    /// A job whose stack could not be walked as far as `swift_job_run` (code with neither frame
    /// pointers nor unwind tables, a corrupt frame), on a thread that keeps burning CPU: a worker
    /// does that only inside a job, so it is watched as one rather than lost. Two such jobs back to
    /// back on one thread cannot be told apart.
    static let unwalked = PoolJob(rootFunction: 0, outerFrames: [])

    /// Whether this is ``unwalked``.
    var isUnwalked: Bool { rootFunction == 0 && outerFrames.isEmpty && stamped == nil }

    /// A job told by its stamps: the running task and when it was queued.
    static func stamped(task: UInt64, queuedAt: UInt64) -> PoolJob {
        PoolJob(rootFunction: 0, outerFrames: [], stamped: (task, queuedAt))
    }

    static func == (a: PoolJob, b: PoolJob) -> Bool {
        a.rootFunction == b.rootFunction && a.outerFrames == b.outerFrames && a.request == b.request
            && a.stamped?.task == b.stamped?.task && a.stamped?.queuedAt == b.stamped?.queuedAt
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(rootFunction)
        hasher.combine(outerFrames)
        hasher.combine(request)
        hasher.combine(stamped?.task)
        hasher.combine(stamped?.queuedAt)
    }
}

/// Finds `swift_job_run` in stacks.
struct SwiftJobFrames {
    private let start: UInt
    private let end: UInt

    /// `nil` when the concurrency runtime is not loaded or its symbol has no size.
    init?() {
        var start: UInt64 = 0
        var size: UInt64 = 0
        guard sw_symbol_range("swift_job_run", &start, &size) != 0 else { return nil }
        self.start = UInt(start)
        self.end = UInt(start + size)
    }

    /// Whether a stack passes through `swift_job_run`: the thread was running a job.
    func contains(_ stack: CapturedStack) -> Bool {
        stack.frames.dropFirst().contains { $0 > start && $0 <= end }
    }

    /// The job a stack is inside of, or `nil` when it is in no job (an idle or draining worker).
    /// - Parameter functionStart: maps a return address to the entry of the function holding it.
    func job(in stack: CapturedStack, functionStart: (UInt) -> UInt) -> PoolJob? {
        // The machine frames: a job is the function the runner called, not its async callers.
        let frames = stack.machineFrames
        // Return addresses point just past their call: inside (start, end].
        guard let i = frames.indices.dropFirst().first(where: { frames[$0] > start && frames[$0] <= end }) else {
            return nil
        }
        // frames[i - 1] returns into the runtime's job runner; the frame inside it is the job's own.
        let own = max(i - 2, 0)
        let inner = functionStart(ReturnAddress.lookup(frames[own], innermost: own == 0))
        return PoolJob(rootFunction: inner, outerFrames: Array(frames[i...]), request: stack.requestTag)
    }
}
