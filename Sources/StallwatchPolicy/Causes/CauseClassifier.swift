import StallwatchReport
/// Names the reason a thread is stalled from what `/proc` says about it — beyond matrix, which
/// only reports stacks. Pure: evidence in, cause out.
package struct CauseClassifier: Sendable, Equatable {
    /// A running thread with CPU at or above this fraction of wall time is CPU-bound (0.5).
    package var cpuBoundFraction: Double

    /// A runnable thread below ``cpuBoundFraction`` that got at least this fraction of its fair
    /// share of the cores (cores ÷ runnable tasks on the machine) is CPU-bound still: it got about
    /// what any task there got (0.5). The count is one reading at one moment, and tasks that take
    /// turns (a load generator, a server's other loops) are in it or not by chance: under load on
    /// 2 shared cores, threads that never left the run queue got 30 % of a core where 4 runnable
    /// tasks made the share 50 %. A thread held to under half of its share was singled out: starved.
    package var fairShareTolerance: Double

    /// The part of the window a runnable thread may spend off every CPU and run queue and still be
    /// CPU-bound at its fair share (0.1). Under load on 2 shared cores, threads doing only CPU work
    /// had CPU plus run-queue wait within 1 % of the wall time; fsync loops and big-file reads,
    /// runnable at the last check, 40-50 % short of it.
    static let blockedPart = 0.1

    /// Creates a classifier.
    package init(cpuBoundFraction: Double = 0.5, fairShareTolerance: Double = 0.5) {
        self.cpuBoundFraction = cpuBoundFraction
        self.fairShareTolerance = fairShareTolerance
    }

    /// Creates a classifier for a configuration.
    package init(configuration _: WatchdogConfiguration) {
        self.init()
    }

    /// Classifies one thread's evidence: the scheduler state first, then the syscall. The thread
    /// count alone is never a cause (matrix's iOS cut-off is not evidence on a server, where a
    /// thousand threads are normal): "too many threads" needs a starved thread and more runnable
    /// threads than cores.
    package func classify(_ e: ThreadEvidence) -> StallCause {
        if e.state == "R" { return classifyRunnable(e) }
        var cpu = ""
        Self.appendCPU(e, to: &cpu)
        switch e.state {
        case "D":
            let call = e.syscall.map { " in \(Self.callName($0))" } ?? ""
            return StallCause(kind: .diskIO, evidence: "state D (uninterruptible wait, usually storage)\(call); \(cpu)", syscall: e.syscall)
        default:
            break
        }
        if let number = e.syscall {
            return classifySyscall(number, e, cpu: cpu)
        }
        if e.cpuFraction >= cpuBoundFraction {
            return StallCause(kind: .cpuBound, evidence: "state \(e.state) now, but \(cpu) during the stall")
        }
        return StallCause(kind: .unknown, evidence: "state \(e.state), no syscall known; \(cpu)")
    }

    /// `CPU 1950.0 ms of 2000.0 wall (98 %)`, appended to `text`.
    private static func appendCPU(_ e: ThreadEvidence, to text: inout String) {
        text += "CPU "
        text += DurationText.milliseconds(e.cpuTimeDelta)
        text += " of "
        text += DurationText.milliseconds(e.wallDelta)
        text += " wall ("
        text += DurationText.percent(e.cpuFraction)
        text += ")"
    }

    /// A runnable thread's evidence is written into one string with room for it: every stall
    /// report states it, and pieces joined by interpolation allocate each.
    ///
    /// Below ``cpuBoundFraction`` of a core the thread is judged against what it could have had:
    /// on a box where more tasks are runnable than there are cores, a thread running its own long
    /// work gets only its fair share (cores ÷ runnable tasks), and that is still the thread's own
    /// code keeping the loop busy — the busy box only stretches it. Only a thread that got clearly
    /// less than that share (under ``fairShareTolerance`` of it), or whose cgroup was held off the
    /// CPUs by its quota, was starved. The process's own runnable threads decide "too many
    /// threads" when they alone would keep the thread below ``cpuBoundFraction`` of a core, or,
    /// as before, when the thread was starved while they outnumbered the cores.
    private func classifyRunnable(_ e: ThreadEvidence) -> StallCause {
        let fraction = e.cpuFraction
        let aboveFloor = fraction >= cpuBoundFraction
        var text = ""
        text.reserveCapacity(320)
        text += aboveFloor ? "running; " : "runnable, under \(DurationText.percent(cpuBoundFraction)) of a core: "
        Self.appendCPU(e, to: &text)
        // Part of the window on no CPU and on no run queue: the thread blocked (an fsync loop, a
        // read from storage between copies). Known only when the wait read is not in doubt.
        var offQueue: Double?
        if let wait = e.runQueueWaitDelta {
            text += "; waited "
            text += DurationText.milliseconds(wait)
            text += " for a CPU"
            // schedstat adds a wait to the thread's total when the wait ends: a thread queued since
            // before the window shows none of it, and "waited 0.0 ms" alone would say it never waited.
            if e.wallDelta - e.cpuTimeDelta - wait > e.wallDelta / 2 {
                text += " (a wait is counted once it ends: the one in progress is not in it)"
            } else if e.wallDelta > .zero {
                offQueue = (e.wallDelta - e.cpuTimeDelta - wait) / e.wallDelta
            }
        }
        if let cause = storageWait(e, text: &text) { return cause }
        if let why = e.storageBytesUnread {
            text += "; storage not weighed: "
            text += why
        }
        if aboveFloor {
            return StallCause(kind: .cpuBound, evidence: text)
        }
        // A quota that held the whole cgroup off the CPUs for a tenth of the window or more starves
        // the thread whatever its share of the machine: its fair share is not what it was allowed.
        if let throttled = e.throttledDelta, e.wallDelta > .zero, throttled >= e.wallDelta / 10 {
            text += "; the process's cgroup was throttled by its CPU quota for "
            text += DurationText.milliseconds(throttled)
            text += " of the window (cpu.stat throttled_usec)"
            return StallCause(kind: .starved, evidence: text)
        }
        let oversubscribed = e.runnableThreadCount.map { e.cores > 0 && $0 > e.cores } ?? false
        if let runnable = e.runnableThreadCount, oversubscribed,
           Double(e.cores) / Double(runnable) < cpuBoundFraction {
            text += "; \(runnable) of the process's \(e.threadCount) threads are runnable on \(e.cores) cores"
            text += ": its own threads alone leave each under "
            text += DurationText.percent(cpuBoundFraction)
            text += " of a core"
            return StallCause(kind: .tooManyThreads, evidence: text, threadCount: e.threadCount)
        }
        guard let machine = e.machineRunnable, e.cores > 0 else {
            // Without the machine's count there is no fair share to compare with: as before, the
            // thread is starved, by its own process's threads when they outnumber the cores.
            text += "; no fair share to compare with: "
            if e.cores <= 0 {
                text += "the online cores are unknown"
            } else if let why = e.machineRunnableUnread {
                text += "the machine's runnable tasks were not read ("
                text += why
                text += ")"
            } else {
                text += "the machine's runnable tasks were not counted"
            }
            return starvedOrTooMany(e, oversubscribed: oversubscribed, text: &text)
        }
        // The stalled thread is runnable, so it is one of the tasks; a count of 0 (read as the
        // thread went off its queue) still leaves it competing with itself only.
        let competing = max(machine.count, 1)
        let share = min(1, Double(e.cores) / Double(competing))
        let gotShare = fraction >= share * fairShareTolerance
        text += gotShare ? "; about its fair share of " : "; clearly under its fair share of "
        text += DurationText.percent(share)
        text += " of a core ("
        text += "\(e.cores) cores, \(machine.count) runnable tasks on the machine, from "
        text += machine.source
        text += ")"
        if gotShare, let off = offQueue, off > Self.blockedPart {
            // Its share says nothing of the time it was not asking for a CPU: not CPU-bound.
            text += "; but off every CPU and run queue for "
            text += DurationText.percent(off)
            text += " of the window (wall less CPU less run-queue wait): it blocked, not only computed"
            return starvedOrTooMany(e, oversubscribed: oversubscribed, text: &text)
        }
        if gotShare {
            return StallCause(kind: .cpuBound, evidence: text)
        }
        return starvedOrTooMany(e, oversubscribed: oversubscribed, text: &text)
    }

    /// The part of the window a runnable thread that moved bytes to or from storage must have
    /// spent off every CPU and run queue for storage to be its cause (0.25). An fsync loop on this
    /// machine's disk: 43 % CPU, 1 % run-queue wait, 56 % blocked, 18 MiB a second written; under
    /// load its CPU share rose past half a core and the state tally missed it in short stalls.
    /// A CPU-bound thread that also writes a log blocks far less than a quarter of its time.
    static let storageBlockedPart = 0.25

    /// Storage, when the thread moved bytes to or from it (``ThreadEvidence/storageBytesDelta``)
    /// and spent ``storageBlockedPart`` of the window neither on a CPU nor waiting for one: it ran
    /// between storage waits, and whichever look found it runnable says nothing of them. The
    /// run-queue wait must be known. A wait still in progress is counted as blocked (schedstat adds
    /// it when it ends), so the gap is an upper bound; the fsync loop's own gap is over half the
    /// window, which the rule above takes for such a doubt, so the doubt cannot rule it out here.
    private func storageWait(_ e: ThreadEvidence, text: inout String) -> StallCause? {
        guard let bytes = e.storageBytesDelta, bytes > 0, let wait = e.runQueueWaitDelta, e.wallDelta > .zero
        else { return nil }
        let blocked = (e.wallDelta - e.cpuTimeDelta - wait) / e.wallDelta
        guard blocked >= Self.storageBlockedPart else { return nil }
        text += "; off every CPU and run queue for "
        text += DurationText.percent(blocked)
        text += " of the window while it moved "
        text += Self.bytesText(bytes)
        text += " to or from storage (read_bytes + write_bytes of its /proc io): it waited on storage between runs"
        return StallCause(kind: .diskIO, evidence: text)
    }

    /// `4.0 KiB`, `18.3 MiB`.
    static func bytesText(_ bytes: UInt64) -> String {
        let kib = Double(bytes) / 1024
        if kib < 1024 { return "\((kib * 10).rounded() / 10) KiB" }
        return "\((kib / 1024 * 10).rounded() / 10) MiB"
    }

    /// A thread that got less than it could have: "too many threads" when its process's runnable
    /// threads outnumbered the cores, otherwise starved by something outside the process.
    private func starvedOrTooMany(_ e: ThreadEvidence, oversubscribed: Bool, text: inout String) -> StallCause {
        // Said either way: a reader ruling out a CPU quota needs to know whether one was looked at.
        if let throttled = e.throttledDelta {
            text += "; its cgroup throttled "
            text += DurationText.milliseconds(throttled)
            text += " by its CPU quota"
        } else {
            text += "; CPU-quota throttling not known (no cgroup v2 cpu.stat with throttled_usec)"
        }
        if oversubscribed, let runnable = e.runnableThreadCount {
            text += "; \(runnable) of the process's \(e.threadCount) threads are runnable on \(e.cores) cores"
            return StallCause(kind: .tooManyThreads, evidence: text, threadCount: e.threadCount)
        }
        return StallCause(kind: .starved, evidence: text)
    }

    private func classifySyscall(_ number: Int, _ e: ThreadEvidence, cpu: String) -> StallCause {
        typealias S = SyscallNumber
        let call = Self.callName(number)
        let on = e.fdKind.map { " on a \($0.rawValue) descriptor" } ?? ""
        func cause(_ kind: StallCauseKind, _ why: String) -> StallCause {
            StallCause(kind: kind, evidence: "state \(e.state) in \(call)\(on): \(why); \(cpu)", syscall: number)
        }
        if number == S.futex { return cause(.lockWait, "waiting on a lock or condition") }
        if S.sleeps.contains(number) { return cause(.sleeping, "sleeping on purpose") }
        if S.readinessWaits.contains(number) { return cause(.networkIO, "waiting for descriptors to become ready") }
        if S.socketOnly.contains(number) || (S.transfer.contains(number) && e.fdKind == .socket) {
            return cause(.networkIO, "socket I/O")
        }
        if S.storageOnly.contains(number) || (S.transfer.contains(number) && e.fdKind == .file) {
            return cause(.diskIO, "file I/O")
        }
        return StallCause(kind: .blockedInSyscall, evidence: "state \(e.state) in \(call)\(on); \(cpu)", syscall: number)
    }

    private static func callName(_ number: Int) -> String {
        SyscallNumber.name(of: number) ?? "syscall \(number)"
    }
}
