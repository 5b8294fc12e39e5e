import CSampler
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import StallwatchPolicy
import StallwatchReport
import Synchronization

/// Watches the Swift concurrency pool one job at a time, from outside: a job that holds its pool
/// thread past the threshold is a stall of that thread, even while the rest of the pool still
/// answers the pool's ping (Hummingbird 2 route handlers and Vapor 4's `async` ones run as such jobs).
///
/// Each scan looks at every libdispatch worker thread:
/// - blocked in a system call: its stack is recovered from the kernel-reported SP/PC (no signal);
///   the scan is skipped while the thread has not run since the previous scan (same syscall,
///   SP, PC, argument and scheduler timeslice count);
/// - running: only a thread that burned most of the interval on the CPU is sampled, by signal;
///   one that ran briefly keeps what the previous scan concluded.
/// A thread inside `swift_job_run` runs a job (``PoolJob``). The job's start and end are told by the
/// thread's demand for a core (CPU time plus run-queue wait, `schedstat`) between two scans: a job
/// first seen running began about that much demand before the scan (a CPU-bound job's thread does
/// nothing else), never before the previous scan; one first seen blocked began between the two
/// scans (the midpoint is taken). So the error is a fraction of the scan period, not a whole one
/// counted from the first scan that happened to see it (the rules: ``PoolJobDating``). Runs on the
/// watchdog thread only.
///
/// Why not the runtime's own job boundaries: the running task (`swift_task_getCurrent`) is a
/// thread-local of the concurrency runtime, readable directly only on the thread itself — in the
/// sampling handler, which runs only on threads that burn CPU — and from outside only once its
/// offset was learned (`BlockedRequestTags`, for blocked threads' requests), which tells a task,
/// not where its job began; `swift_task_enqueueGlobal_hook` sees a job when it is queued,
/// not when it starts or ends, and wrapping every job to see those would put the watchdog on the
/// path of every job in the process. The scan needs neither.
final class PoolJobWatcher {
    /// The loop name pool-job stalls are reported under.
    static let loopName = "cooperative-pool-job"

    private final class PoolThread {
        let probe = HeartbeatProbe(name: PoolJobWatcher.loopName)
        /// Its syscall and schedstat files, kept open: read every scan the thread has run since.
        let files: TaskFiles
        /// Its name (`oot.default-qos`): which root queue, so which priority's pool, it serves.
        let name: String
        /// `bornAfter`: an instant the thread did not exist yet, if known.
        init(_ tid: ThreadID, name: String, at now: MonotonicInstant, bornAfter: MonotonicInstant?) {
            files = TaskFiles(tid)
            self.name = name
            firstSeenAt = now
            // Born since: outside any job then, with no demand yet. A job found on a worker
            // started for it (the pool grows when a request comes) is dated from that, as on any
            // other worker, and a scan that concludes nothing of it counts from its first listing.
            if let bornAfter { last = (bornAfter, 0, false) }
        }
        /// The scan that first listed the thread as a worker.
        let firstSeenAt: MonotonicInstant
        /// The last scan that listed the thread (one that did not has seen it exit).
        var seen = 0
        /// Whether its first whole stack ran through libdispatch (see `confirmWorker`); `nil` until
        /// one was seen, while its name alone makes it a worker. `false`: named like one, not one.
        var isWorker: Bool?
        var job: PoolJob?
        /// Its thread pointer, once a blocked stack pointer gave it (0: not yet): its running task
        /// is read there (``PoolJobStamps``).
        var threadPointer: UInt64 = 0
        /// Blocked looks that tried and failed to find the thread pointer (tried a few times only:
        /// each failure reads the process's memory map again).
        var threadPointerTries = 0
        /// The last look that read its running task.
        var stampLookAt: MonotonicInstant?
        var blockedAt: (call: sw_thread_syscall_t, timeslices: UInt64)?
        var cpu: (time: Duration, at: MonotonicInstant)?
        /// The last conclusive scan: when, the thread's demand for a core then (ns), and whether it ran.
        var last: PoolJobDating.Conclusion?
        /// The first scan since the thread was last seen outside any job that saw it elsewhere,
        /// and the newest such scan.
        var awaySince: MonotonicInstant?
        var awaySeenAt: MonotonicInstant?
        /// The thread's demand for a core (ns) at the last scan that read it, and when: the share of
        /// a core it wanted since then tells a brief run from a long job's.
        var scanDemand: PoolJobDating.Mark?
        /// The newest scan since the last conclusive one that found the thread outside any job it
        /// is known in, running briefly, before any other sign of it away: a job seen next began
        /// after it (see ``PoolJobDating/start(previous:briefRun:awaySince:now:demandNow:runningNow:)``).
        var briefRunAt: PoolJobDating.Mark?
        /// The first scan since the last conclusive one, and since any other sign of the thread
        /// away, that found it, known in a job, running briefly: a job found over next ended before it.
        var briefRunInJobAt: PoolJobDating.Mark?
        /// The share of a core the thread wanted up to the last scan that saw it in its job.
        var jobShare: Double?

        /// A scan found the thread's CPU clock where the previous one left it: it has wanted no
        /// core since (a thread that waits is on no run queue), so its demand then is its demand
        /// now. Without this, the share read at its next full scan would be spread over every scan
        /// since, and a CPU-bound job's first interval would read as a brief run.
        func notRunSinceLastScan(now: MonotonicInstant) {
            if let d = scanDemand { scanDemand = (now, d.demand) }
        }
        /// The last signal sent because no scan had concluded anything of the running thread for
        /// ``inconclusiveSignalAfter``.
        var inconclusiveSignalAt: MonotonicInstant?
        /// Where this worker waits outside any job (for work, or for a timer): the same syscall,
        /// SP, PC and first argument every time, and no job ever waits at that very SP and PC.
        /// Known, so an idle worker costs one /proc read per scan, not a stack scan.
        var idleWaits: [sw_thread_syscall_t] = []
        /// Per entry of ``idleWaits``: whether its stack held nothing but libdispatch and libc, so
        /// the worker waits for work there. A `DispatchQueue.global()` block blocked outside any
        /// Swift job is "outside any job" too, but it has its client's frames and keeps the worker.
        var waitsForWork: [Bool] = []
        /// Whether the last scan found the thread waiting for work (see ``waitsForWork``).
        var idleForWork = false
        /// Since when, and why, the thread has been away from its wait with no job told from its
        /// stack (see ``PoolUnwatched``).
        var unwatched = PoolUnwatched()
        /// The word its wait for work sleeps on (the futex's address): every worker of one root
        /// queue waits on that queue's one semaphore, so the word tells the worker's pool where its
        /// name may not (a thread created by another pool's worker inherits that worker's name).
        var workWord: UInt64?
        /// The thread's CPU time (ns) when a scan last saw it in one of its ``idleWaits``: while its
        /// CPU clock still reads that, it has not run since, so it still waits there and its /proc
        /// files are not read at all.
        var idleCPU: UInt64?
        /// The thread's CPU time when a scan last found it blocked elsewhere (in a job's wait, or
        /// one not yet known as idle): while its clock still reads that, it has not run, so it
        /// waits where it did and nothing is new.
        var blockedCPU: UInt64?
    }

    /// Settles whether `thread` is a libdispatch worker from its first whole stack: a worker's
    /// runs through libdispatch (its worker loop). A thread created from a pool worker inherits the
    /// worker's name (Linux copies it, and Foundation's `Thread.name` does not rename the kernel
    /// thread), so a service's own thread started from async code is named `oot.default-qos` too;
    /// taken for a worker, a busy one would be signalled at every scan.
    private func confirmWorker(_ thread: PoolThread, by stack: CapturedStack) {
        guard thread.isWorker == nil, stack.isWhole else { return }
        // Modules only: symbolizing the frames would load the symbol table of every module on the
        // stack, the executable's too (100–200 ms for a large one, in the scan of the first stall).
        thread.isWorker = stack.frames.contains { isInDispatch($0) }
    }

    /// Whether an address lies in libdispatch.
    private func isInDispatch(_ address: UInt) -> Bool {
        guard let module = symbolizer.modulePath(of: address) else { return false }
        return (module.split(separator: "/").last ?? Substring(module)).hasPrefix("libdispatch.so")
    }

    private let sampler: StackSampler
    private let symbolizer: Symbolizer
    private let frames: SwiftJobFrames?
    private var threads: [ThreadID: PoolThread] = [:]
    /// Threads listed that are not named like libdispatch workers (see ``PoolOtherThread``).
    private var others: [ThreadID: PoolOtherThread] = [:]
    private var scans = 0
    /// When the last rest of the pool ended (``rested(until:)``).
    private var restedUntil: MonotonicInstant?
    /// The thread listing, read again only when the thread count changed or it is half a second old.
    private let roster: ThreadRoster
    /// Whether the current run of failed listings was said (once per run, not once per scan).
    private var listingFailureSaid = false

    /// How long a running thread may go with no scan concluding anything of it (in which job it
    /// is, or that it is in none) before a scan that finds it running signals it whatever its CPU
    /// share. A job that alternates short bursts on the CPU with blocking calls (an fsync storm:
    /// 40 % CPU, its blocked stacks often caught mid-change) was otherwise identified late or never:
    /// a 600 ms one at a 500 ms threshold went unreported (2 of 10 in the stall matrix). At most one
    /// such signal per this period and thread, so a worker running many short jobs costs little more.
    let inconclusiveSignalAfter: Duration

    /// How long a worker may stay away from its wait with no job told before an event says so
    /// (the threshold: by then a job there would have been reported).
    let unwatchedAfter: Duration
    /// What ``takeUnwatchedNotes()`` hands out: one sentence per worker that cannot be watched.
    private var unwatchedNotes: [String] = []

    init(sampler: StackSampler, symbolizer: Symbolizer, inconclusiveSignalAfter: Duration = .milliseconds(500),
         unwatchedAfter: Duration = .milliseconds(500), roster: ThreadRoster = ThreadRoster()) {
        self.roster = roster
        self.sampler = sampler
        self.symbolizer = symbolizer
        self.frames = SwiftJobFrames()
        self.inconclusiveSignalAfter = inconclusiveSignalAfter
        self.unwatchedAfter = unwatchedAfter
    }

    /// The workers found unwatchable since the last call, each said once per stretch away, and
    /// a listing of the process's threads that failed, once until one succeeds.
    func takeUnwatchedNotes() -> [String] {
        defer { unwatchedNotes.removeAll() }
        return unwatchedNotes
    }

    /// Why a blocked worker's stack tells no job: where and why its walk ended.
    private func cutWhy(_ stack: CapturedStack) -> String {
        let last = stack.frames.last.map {
            symbolizer.symbolize($0, innermost: stack.frames.count == 1).symbol ?? "0x\(String($0, radix: 16))"
        } ?? "?"
        return "its stack ends before the job runner (swift_job_run), at \(last) (\(stack.walkEnd?.name ?? "cut"))"
    }

    /// Whether the concurrency runtime's job runner was found (without it nothing is watched).
    var isAvailable: Bool { frames != nil }

    /// Whether a stack was taken inside a job: samples of a pool thread taken after its job ended
    /// (before the next scan noticed) must not be blamed on the job.
    func isInJob(_ stack: CapturedStack) -> Bool {
        guard let frames else { return false }
        if frames.contains(stack) { return true }
        // A stack cut before `swift_job_run` says nothing either way: it belongs to the job the
        // scans see the thread in, if any.
        return !stack.isWhole && threads[stack.thread]?.job != nil
    }

    /// Whether a scan has concluded something of `tid` (in which job it is, or that it is in none):
    /// a job it starts next is dated from that scan. For tests.
    func hasBaseline(_ tid: ThreadID) -> Bool { threads[tid]?.last != nil }

    /// Whether any pool thread is in a job now: then every round scans, so a job's end is seen at once.
    var anyInJob: Bool { threads.values.contains { $0.job != nil } }

    /// The probes of the pool threads now known, one per thread.
    var probes: [HeartbeatProbe] { threads.values.map(\.probe) }

    /// Whether the last scan found the pool quiet: every worker it knows waiting for work, and no new
    /// worker.
    private(set) var lastScanFoundQuiet = false

    /// The pool rested (``PoolRest``) until `instant`: every worker the last scan found outside any
    /// job stayed there until then, as if a scan had seen it then, so a job first seen next began after.
    func rested(until instant: MonotonicInstant) {
        restedUntil = instant
        for thread in threads.values where thread.job == nil {
            if let last = thread.last, last.at < instant { thread.last = (instant, last.demand, false) }
        }
    }

    /// Scans the pool threads once; running threads are sampled by signal only if `maySignal`
    /// (asked only when a capture is due: the watchdog checks the signal's handler then).
    /// Returns whether the set of threads changed.
    func scan(now: MonotonicInstant, maySignal: @autoclosure () -> Bool = true) -> Bool {
        PoolScanCost.scanCount.add(1, ordering: .relaxed)
        lastScanFoundQuiet = false
        stampsReadable = PoolJobStamps.isReadable
        // A thread first listed now was born after the previous listing.
        let previousListing = roster.listedAt
        guard let frames else { return false }
        let listed: Bool
        do {
            listed = try roster.refresh(now: now)
            listingFailureSaid = false
        } catch {
            if !listingFailureSaid {
                unwatchedNotes.append("pool workers cannot be listed (\(error)): no pool job is watched until they can be")
                listingFailureSaid = true
            }
            return false
        }
        if listed { PoolScanCost.procReadCount.add(1, ordering: .relaxed) }
        var quiet = true
        scans += 1
        lastScan = now
        var changed = false
        let own = ThreadID.current
        // Every thread listed now is stamped with this scan; the ones not stamped have exited.
        // (No set of the listed ids: an idle scan allocates nothing.)
        for tid in roster.threads where tid != own {
            let thread: PoolThread
            if let known = threads[tid] {
                thread = known
            } else {
                if var other = others[tid] {
                    other.seen = scans
                    // Assigned whole: the optional-chained `_modify` of a dictionary value allocates.
                    others[tid] = other
                    if other.retry > scans {
                        if other.isYoung(at: scans) { quiet = false }
                        continue
                    }
                }
                PoolScanCost.procReadCount.add(1, ordering: .relaxed)
                // Born since the previous listing (not in it), or since a rest began: after that
                // listing, or after the rest ended.
                // (No array of the two: this runs for every thread not known as a worker, and an
                // array per such thread was 55 of the watchdog's mallocs in one `bench allocations` run.)
                let bornSince = Self.later(previousListing, restedUntil)
                guard let name = Self.dispatchWorkerName(tid) else {
                    if var other = others[tid] {
                        other.stillOther(at: scans)
                        others[tid] = other
                    } else {
                        others[tid] = PoolOtherThread(firstListedBy: scans, bornAfter: bornSince)
                    }
                    // A young thread may be a new worker that has not named itself yet: the pool
                    // is not quiet until it settled.
                    if others[tid]?.isYoung(at: scans) == true { quiet = false }
                    continue
                }
                // A thread listed before under another name was born when it was first listed.
                let bornAfter = others[tid].map(\.bornAfter) ?? bornSince
                others[tid] = nil
                thread = PoolThread(tid, name: name, at: now, bornAfter: bornAfter)
                threads[tid] = thread
                changed = true
                quiet = false
            }
            thread.seen = scans
            if !observe(thread, tid: tid, now: now, frames: frames, maySignal: maySignal()) { quiet = false }
            if thread.isWorker != false, let why = thread.unwatched.due(now: now, after: unwatchedAfter) {
                unwatchedNotes.append("pool worker \(tid.rawValue) (\(thread.name)) is not watched: \(why); a stall of the job it runs cannot be dated or reported")
            }
            if thread.isWorker == false {
                // Named like a worker, not one: looked at again only as rarely as any other thread.
                threads[tid] = nil
                others[tid] = PoolOtherThread(notAWorkerAt: scans)
                changed = true
            }
        }
        if threads.values.contains(where: { $0.seen != scans }) {
            threads = threads.filter { $0.value.seen == scans }
            changed = true
        }
        if others.values.contains(where: { $0.seen != scans }) {
            others = others.filter { $0.value.seen == scans }
        }
        // A worker gone (idle workers exit after about 5 s) leaves the pool quiet; a new one does not.
        lastScanFoundQuiet = quiet
        return changed
    }

    /// The later of two instants, either of which may be missing.
    private static func later(_ a: MonotonicInstant?, _ b: MonotonicInstant?) -> MonotonicInstant? {
        guard let a else { return b }
        guard let b else { return a }
        return max(a, b)
    }

    /// Returns whether the thread was found waiting for work.
    private func observe(_ thread: PoolThread, tid: ThreadID, now: MonotonicInstant, frames: SwiftJobFrames, maySignal: @autoclosure () -> Bool) -> Bool {
        var maySignalNow = maySignal()
        if stampsReadable, thread.threadPointer != 0 {
            switch lookAtRunningTask(thread, tid: tid, now: now) {
            case .some(true): return false
            case .some(false): maySignalNow = false
            case .none: break
            }
        }
        return observeByScan(thread, tid: tid, now: now, frames: frames, maySignal: maySignalNow)
    }

    /// Whether the running task can be read and is stamped (``PoolJobStamps``), as of this scan.
    private var stampsReadable = false

    /// Looks at the task `thread` runs: `true` when its stamps tell its job (nothing more to read),
    /// `false` when it runs no task (the scan goes on to tell its idle wait, with no signal: there
    /// is no job to identify), `nil` when they tell nothing (the scan goes on as without stamps).
    private func lookAtRunningTask(_ thread: PoolThread, tid: ThreadID, now: MonotonicInstant) -> Bool? {
        guard let read = PoolJobStamps.read(tid, threadPointer: thread.threadPointer) else {
            thread.threadPointer = 0
            return nil
        }
        let previousLook = thread.stampLookAt
        thread.stampLookAt = now
        let look = PoolJobStamps.conclude(task: read.task, stamp: read.stamp, current: thread.job,
                                         previousLook: previousLook, resolution: MonotonicClock.coarseResolution)
        switch look {
        case .same:
            return true
        case .began(let job, let start):
            PoolScanCost.stampedJobCount.add(1, ordering: .relaxed)
            // The job before ended before this one began.
            if thread.job != nil { thread.probe.markIdle(since: start) }
            thread.job = job
            forgetScanConclusions(thread)
            thread.unwatched = PoolUnwatched()
            thread.idleForWork = false
            thread.probe.markBusy(since: start, thread: tid)
            return true
        case .outsideAnyTask, .unstamped:
            if look == .unstamped { PoolScanCost.unstampedJobCount.add(1, ordering: .relaxed) }
            if thread.job?.stamped != nil {
                // Ended between the two looks.
                let end = previousLook.map { $0 + (now - $0) / 2 } ?? now
                thread.probe.markIdle(since: end)
                thread.job = nil
                forgetScanConclusions(thread)
            }
            return look == .unstamped ? nil : false
        }
    }

    /// Finds `thread`'s thread pointer from its stack pointer while blocked, once stamps are
    /// readable (a few tries at most: each failure reads the process's memory map again).
    private func learnThreadPointer(_ thread: PoolThread, tid: ThreadID, blockedAt sp: UInt64) {
        guard stampsReadable, thread.threadPointer == 0, thread.threadPointerTries < 3 else { return }
        thread.threadPointer = sw_thread_pointer_from_stack(tid.rawValue, sp)
        if thread.threadPointer == 0 { thread.threadPointerTries += 1 }
    }

    /// Drops what earlier scans concluded of `thread`: a job its stamps told came in between, so
    /// they no longer bound the next job's start (a job first seen by a scan now is dated from then).
    private func forgetScanConclusions(_ thread: PoolThread) {
        thread.last = nil
        thread.scanDemand = nil
        thread.awaySince = nil
        thread.awaySeenAt = nil
        thread.briefRunAt = nil
        thread.briefRunInJobAt = nil
        thread.jobShare = nil
        thread.blockedAt = nil
        thread.idleCPU = nil
        thread.blockedCPU = nil
        thread.cpu = nil
        // A job seen next by a scan is dated from that scan, not signalled for at once as a thread
        // with no baseline would be.
        thread.inconclusiveSignalAt = nil
    }

    private func observeByScan(_ thread: PoolThread, tid: ThreadID, now: MonotonicInstant, frames: SwiftJobFrames, maySignal: @autoclosure () -> Bool) -> Bool {
        // An idle worker that has not run since a scan saw it in its idle wait is still there:
        // one CPU clock read (a system call, no file) instead of two /proc reads.
        var cpuNow: UInt64 = 0
        PoolScanCost.clockReadCount.add(1, ordering: .relaxed)
        let clockRead = sw_thread_cpu_time_ns(tid.rawValue, &cpuNow) == 0
        if let idleCPU = thread.idleCPU, clockRead, cpuNow == idleCPU, thread.job == nil {
            // As conclusive as reading it: still outside any job, now (a job's start lies after).
            if let last = thread.last { thread.last = (now, last.demand, false) }
            thread.notRunSinceLastScan(now: now)
            return thread.idleForWork
        }
        if let blockedCPU = thread.blockedCPU, clockRead, cpuNow == blockedCPU, let before = thread.blockedAt,
           !thread.idleWaits.contains(where: { Self.sameWait($0, before.call) }) {
            // Not run since it blocked: the same wait, so the same job, as the same-wait check
            // below would conclude from two /proc reads. (A wait just learnt as idle goes the long
            // way once more, to be known as idle.)
            if let last = thread.last { thread.last = (now, last.demand, false) }
            thread.notRunSinceLastScan(now: now)
            if thread.awaySince == nil { thread.awaySince = now }
            thread.awaySeenAt = now
            return false
        }
        thread.idleCPU = nil
        thread.blockedCPU = nil
        let wasIdleForWork = thread.idleForWork
        thread.idleForWork = false
        var call = sw_thread_syscall_t()
        PoolScanCost.procReadCount.add(2, ordering: .relaxed)
        guard thread.files.syscall(&call) == 0 else { return false }
        var run: UInt64 = 0, wait: UInt64 = 0, slices: UInt64 = 0
        let sched = thread.files.schedstat(run: &run, wait: &wait, timeslices: &slices) == 0
        // The last scan that concluded something (in a job, or outside any): the job's start and
        // end lie after it, and the demand since then is what the thread ran meanwhile.
        let previous = thread.last
        // The share of a core the thread wanted since its previous scan.
        let share = sched ? thread.scanDemand.flatMap { PoolJobDating.share(since: $0, now: now, demandNow: run &+ wait) } : nil
        thread.scanDemand = sched ? (now, run &+ wait) : nil
        var ranBriefly = false
        // Wanted all but a tenth of a core since the previous scan, running now: a CPU-bound job. A
        // job that mixes reads or fsyncs with copying (30–60 % at times) is not one: its demand
        // would date it late, and a stall dated late is detected late.
        var onCPU = false
        let job: PoolJob??  // nil: no new evidence, keep the previous conclusion
        if call.nr >= 0, let wait = thread.idleWaits.firstIndex(where: { Self.sameWait($0, call) }) {
            learnThreadPointer(thread, tid: tid, blockedAt: call.sp)
            thread.blockedAt = nil
            thread.cpu = nil
            thread.idleForWork = thread.waitsForWork[wait]
            if thread.idleForWork { thread.workWord = thread.idleWaits[wait].args.0 }
            job = .some(nil)
            // Read before the syscall file: a thread that ran in between has a newer clock.
            if clockRead { thread.idleCPU = cpuNow }
        } else if call.nr >= 0 {
            if clockRead { thread.blockedCPU = cpuNow }
            learnThreadPointer(thread, tid: tid, blockedAt: call.sp)
            if let before = thread.blockedAt, Self.sameWait(before.call, call), before.timeslices == slices {
                job = nil // it has not run since: the same wait in the same job (or the same idle wait)
                thread.idleForWork = wasIdleForWork
                // Still where the last conclusion left it, now: a job's end lies after this scan.
                if thread.last != nil { thread.last = (now, run &+ wait, false) }
            } else {
                thread.blockedAt = (call, slices)
                let stack: CapturedStack?
                do { stack = try sampler.captureBlockedStack(of: tid) } catch {
                    stack = nil
                    thread.unwatched.failed(now: now, why: "its blocked stack could not be read (\(error))")
                }
                if let stack { confirmWorker(thread, by: stack) }
                job = stack.flatMap { identify($0, frames, thread: thread, running: false) }
                if let stack, job == nil, thread.job == nil { thread.unwatched.failed(now: now, why: cutWhy(stack)) }
                if let stack, case .some(.none) = job {
                    let forWork = stack.isWhole && isWorkerWait(stack)
                    thread.idleForWork = forWork
                    if forWork { thread.workWord = call.args.0 }
                    if thread.idleWaits.count < 4 {
                        thread.idleWaits.append(call)
                        thread.waitsForWork.append(forWork)
                    }
                }
            }
            thread.cpu = nil
        } else if call.nr == -2 {
            thread.blockedAt = nil
            // The clock read at the top of this scan of it (a system call each: not twice).
            let cpuNow: Duration? = clockRead ? .nanoseconds(Int64(clamping: cpuNow)) : nil
            defer { thread.cpu = cpuNow.map { ($0, now) } }
            let busy = cpuNow.flatMap { cpuNow in
                thread.cpu.map { before in now > before.at && (cpuNow - before.time) / (now - before.at) >= 0.5 }
            } ?? false
            onCPU = (share ?? 0) >= PoolJobDating.cpuBoundShare
            if busy || isInconclusiveTooLong(thread, now: now), maySignal() {
                // Busy on the CPU for most of the interval, or away too long with nothing
                // concluded: worth a signal to see which job.
                if !busy { thread.inconclusiveSignalAt = now }
                let stack: CapturedStack?
                do { stack = try sampler.signalCaptureOrKernelSample(tid, unwinder: .framePointer, timeout: .milliseconds(20)) } catch {
                    stack = nil
                    if thread.job == nil { thread.unwatched.failed(now: now, why: "its stack could not be captured (\(error))") }
                }
                if let stack { confirmWorker(thread, by: stack) }
                job = stack.flatMap { identify($0, frames, thread: thread, running: true) }
            } else {
                job = nil
                ranBriefly = PoolJobDating.isBriefRun(share: share, jobShare: thread.job != nil ? thread.jobShare : nil)
            }
        } else {
            job = nil // blocked outside a system call (a page fault): nothing to conclude
        }
        // Every scan that saw the thread outside its idle wait counts, conclusive or not (a thread
        // in fsync flips between D and running in the kernel with little CPU, which concludes
        // nothing): a job's start lies before the first of them, its end after the last.
        let awaySince = thread.awaySince, awaySeenAt = thread.awaySeenAt
        if case .some(.none) = job {
            thread.awaySince = nil
            thread.inconclusiveSignalAt = nil
            thread.briefRunAt = nil
        } else if ranBriefly, thread.job == nil, thread.awaySince == nil {
            // Not yet a sign of a long job: one blocking now (its first sign) began after this.
            // Once the thread was seen away otherwise, a brief run may be that job's own, between
            // two of its blocking calls, and counts as away like any other.
            thread.briefRunAt = (now, run &+ wait)
        } else if ranBriefly, thread.job != nil {
            if thread.briefRunInJobAt == nil { thread.briefRunInJobAt = (now, run &+ wait) }
            if thread.awaySince == nil { thread.awaySince = now }
        } else {
            thread.briefRunInJobAt = nil
            if thread.awaySince == nil { thread.awaySince = now }
            thread.awaySeenAt = now
        }
        guard var job else { return false }
        thread.unwatched = PoolUnwatched()
        thread.last = sched ? (now, run &+ wait, call.nr == -2) : nil
        thread.jobShare = job == nil ? nil : share
        let briefRunAt = thread.briefRunAt, briefRunInJobAt = thread.briefRunInJobAt
        thread.briefRunAt = nil
        thread.briefRunInJobAt = nil
        if let seen = job {
            if thread.job?.isUnwalked == true, !seen.isUnwalked {
                // The same job, its stack walked now: it keeps the start it was first seen with.
            } else if !seen.isSame(as: thread.job) {
                let wasOut = thread.job == nil
                let start = PoolJobDating.start(previous: previous, briefRun: wasOut ? briefRunAt : nil,
                                                awaySince: wasOut ? awaySince : nil, now: now,
                                                demandNow: sched ? run &+ wait : nil, runningNow: call.nr == -2,
                                                onCPU: onCPU, afterJob: !wasOut)
                thread.probe.markBusy(since: start, thread: tid)
            } else if seen.request == nil {
                // The same job seen by a capture that read no tag (a blocked thread's, before its
                // layout was learned): it still serves the request it was seen with.
                job?.request = thread.job?.request
            }
        } else if thread.job != nil {
            let end = PoolJobDating.end(previous: previous, awaySeenAt: awaySeenAt, briefRunInJob: briefRunInJobAt,
                                        now: now, demandNow: sched ? run &+ wait : nil)
            thread.probe.markIdle(since: end)
        }
        thread.job = job
        return job == nil && thread.idleForWork
    }

    /// Whether no scan has concluded anything of `thread` for ``inconclusiveSignalAfter`` (since
    /// the last conclusive scan, and since the last signal this sent it).
    private func isInconclusiveTooLong(_ thread: PoolThread, now: MonotonicInstant) -> Bool {
        // A worker listed at the watchdog's first scan has no baseline (a worker born later has its
        // birth): until a scan concludes something of it, a job it starts cannot be dated but from
        // its first sighting in it, up to threshold / 5 late (the first stall after a Vapor start
        // came 57–104 ms late, 4 times in 8). One signal at first sight gives it one.
        if thread.last == nil, thread.inconclusiveSignalAt == nil { return true }
        let last = thread.last?.at ?? thread.firstSeenAt
        return now - max(last, thread.inconclusiveSignalAt ?? last) >= inconclusiveSignalAfter
    }

    /// The job a stack shows; `.some(nil)` when it shows the thread outside any job, `nil` when it
    /// says nothing (a walk cut short before reaching `swift_job_run` proves no job boundary).
    /// A stack of a thread found busy on the CPU (`running`) that cannot be walked that far is
    /// ``PoolJob/unwalked`` unless the thread is already known in a job. A thread known in a job is
    /// taken out of it only by a stack that ends where the job's did (the worker's own entry): a walk
    /// that stopped early but looked whole must not end a job that is still running.
    private func identify(_ stack: CapturedStack, _ frames: SwiftJobFrames, thread: PoolThread, running: Bool) -> PoolJob?? {
        let job = frames.job(in: stack) { address in
            // The unwind table first: the symbol table of a large executable took 100–200 ms to
            // load, and a scan that loaded it, at the first stall after start, ran that late.
            var start: UInt64 = 0
            if sw_function_start(UInt64(address), &start) != 0 { return UInt(start) }
            return symbolizer.symbolize(address).functionAddress ?? address
        }
        if job == nil && !stack.isWhole {
            if running, thread.job == nil { return .some(.unwalked) }
            return nil
        }
        if job == nil, let entry = thread.job?.outerFrames.last, stack.frames.last != entry { return nil }
        return .some(job)
    }

    private static func sameWait(_ a: sw_thread_syscall_t, _ b: sw_thread_syscall_t) -> Bool {
        a.nr == b.nr && a.sp == b.sp && a.pc == b.pc && a.args.0 == b.args.0
    }

    /// The cooperative pool's threads are libdispatch workers of a non-overcommit root queue, named
    /// after it (`com.apple.root.default-qos`, cut to its last 15 bytes: `oot.default-qos`).
    /// Overcommit workers (`-qos.overcommit`: serial queues, the dispatch manager) run no pool jobs.
    /// Returns the worker's name, or `nil` for any other thread.
    static func dispatchWorkerName(_ tid: ThreadID) -> String? {
        var stat = sw_thread_stat_t()
        guard sw_thread_stat(tid.rawValue, &stat) == 0 else { return nil }
        let name = ThreadInfo.name(in: stat)
        return name.hasSuffix("-qos") ? name : nil
    }

    /// Whether a blocked worker's stack is its wait for work: the worker's own loop
    /// (`_dispatch_worker_thread`, the outermost libdispatch frame) calling nothing but libdispatch's
    /// semaphore wait, whatever lies below that (libc, or a sanitizer's interceptor linked into the
    /// executable). A job or a client's block is run through other libdispatch frames
    /// (`_dispatch_continuation_pop`, a drain), with the client's frames between them. Without
    /// libdispatch's symbols nothing is taken for a wait for work (the pool is then pinged).
    /// Read once per wait learnt, not per scan.
    private func isWorkerWait(_ stack: CapturedStack) -> Bool {
        let frames = stack.frames  // the leaf first
        // Only libdispatch's frames are named (its table is small); the others' modules suffice.
        guard let inner = frames.firstIndex(where: isInDispatch), let outer = frames.lastIndex(where: isInDispatch),
              symbolizer.symbolize(frames[outer]).symbol == "_dispatch_worker_thread" else { return false }
        // Above the worker's loop lies only the thread's start (a sanitizer wraps it in the executable).
        return frames[inner..<outer].allSatisfy { isInDispatch($0) && symbolizer.symbolize($0).symbol?.contains("sema") == true }
    }

    // MARK: - the pool's own look (in place of its ping)

    /// Whether the last scan found `tid` waiting for work (`nil`: not a pool thread it knows).
    func waitsForWork(_ tid: ThreadID) -> Bool? { threads[tid]?.idleForWork }

    /// The last scan, if any ran.
    private(set) var lastScan: MonotonicInstant?

    /// What the last scan saw of the pool whose workers are named `workerName`: whether it can
    /// start a job now (a worker of it waits for work and fewer than ``poolWidth`` are away from
    /// their wait, or it has no worker, so nothing of it runs),
    /// and otherwise one of its workers away from its wait, longest in a job first (the thread a
    /// starved pool's report samples).
    ///
    /// `pinger`: the thread that ran the pool's last ping, a worker of that very pool. Once a scan
    /// saw it waiting for work, the word it waits on names the pool, and a worker named alike that
    /// waits on another word serves another root queue: it does not make this pool free. With every
    /// worker of a pool blocked, libdispatch starts threads for other root queues from them, which
    /// inherit their name; one of those waiting for work hid the starved pool (no ping, no report).
    func look(atPoolNamed workerName: String, pingedOn pinger: ThreadID? = nil) -> (free: Bool, busyWorker: ThreadID?) {
        // Learnt once: a root queue's semaphore stays where it is.
        if poolWords[workerName] == nil, let pinger, let word = threads[pinger]?.workWord,
           threads[pinger]?.name == workerName {
            poolWords[workerName] = word
        }
        let poolWord = poolWords[workerName]
        var any = false
        var waiting = false
        var away = 0
        var busy: ThreadID?
        var busySince: MonotonicInstant?
        for (tid, thread) in threads where thread.name == workerName {
            if let poolWord, let word = thread.workWord, word != poolWord { continue }  // another root queue's worker
            any = true
            if thread.idleForWork {
                waiting = true
                continue
            }
            away += 1
            if let since = thread.probe.busySince {
                if busySince.map({ since < $0 }) ?? true { (busy, busySince) = (tid, since) }
            } else if busy == nil {
                busy = tid
            }
        }
        // A worker waiting for work starts a job only while the pool has a free slot: libdispatch
        // runs at most as many of a pool's workers as there are CPUs, and a worker blocked in a job
        // keeps its slot. With that many away, a job given to the pool waits however many workers
        // wait for work (seen: two jobs blocked, a third queued, a third worker idle for seconds).
        if waiting && away < Self.poolWidth { return (true, nil) }
        return (!any, busy)
    }

    /// How many of a pool's workers libdispatch runs at once: the CPU count (`_SC_NPROCESSORS_CONF`).
    static let poolWidth = max(Int(sysconf(Int32(_SC_NPROCESSORS_CONF))), 1)

    /// The workers in a job now, each with its name and its pool-job loop's probe.
    var workersInJobs: [(thread: ThreadID, name: String, probe: HeartbeatProbe)] {
        threads.compactMap { tid, thread in thread.job == nil ? nil : (tid, thread.name, thread.probe) }
    }

    /// Per worker name, the word the workers of the pinged pool wait for work on (see ``look(atPoolNamed:pingedOn:)``).
    private var poolWords: [String: UInt64] = [:]
}

/// What the pool-job scans cost, process-wide (for `bench probe`: counts, robust to a noisy machine).
package enum PoolScanCost {
    /// The counts at one instant.
    package struct Counts: Sendable, Equatable {
        /// Scans of the pool threads.
        package var scans: UInt64
        /// `/proc` files read (thread listings, `syscall`, `schedstat` and `stat` files).
        package var procReads: UInt64
        /// Pool-thread CPU clock reads.
        package var cpuClockReads: UInt64
        /// Jobs dated by their enqueue stamp (``PoolJobStamps``), and looks that found a task whose
        /// stamp did not date its run (left to the scans; one such run is counted at every look).
        package var stampedJobs: UInt64 = 0
        package var unstampedJobs: UInt64 = 0
    }
    static let scanCount = Atomic<UInt64>(0)
    static let procReadCount = Atomic<UInt64>(0)
    static let clockReadCount = Atomic<UInt64>(0)
    static let stampedJobCount = Atomic<UInt64>(0)
    static let unstampedJobCount = Atomic<UInt64>(0)
    /// The scans' cost so far, over every watcher of the process.
    package static var counts: Counts {
        Counts(scans: scanCount.load(ordering: .relaxed), procReads: procReadCount.load(ordering: .relaxed),
               cpuClockReads: clockReadCount.load(ordering: .relaxed),
               stampedJobs: stampedJobCount.load(ordering: .relaxed),
               unstampedJobs: unstampedJobCount.load(ordering: .relaxed))
    }
}
