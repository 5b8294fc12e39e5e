import StallwatchReport
/// Names the reason a thread is stalled from what `/proc` says about it — beyond matrix, which
/// only reports stacks. Pure: evidence in, cause out.
package struct CauseClassifier: Sendable, Equatable {
    /// A running thread with CPU at or above this fraction of wall time is CPU-bound (0.5).
    package var cpuBoundFraction: Double

    /// Creates a classifier.
    package init(cpuBoundFraction: Double = 0.5) {
        self.cpuBoundFraction = cpuBoundFraction
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
    /// report states it, and pieces joined by interpolation allocate each (issue 19).
    private func classifyRunnable(_ e: ThreadEvidence) -> StallCause {
        let cpuBound = e.cpuFraction >= cpuBoundFraction
        var text = ""
        text.reserveCapacity(192)
        text += cpuBound ? "running; " : "runnable but little CPU: "
        Self.appendCPU(e, to: &text)
        if let wait = e.runQueueWaitDelta {
            text += "; waited "
            text += DurationText.milliseconds(wait)
            text += " for a CPU"
            // schedstat adds a wait to the thread's total when the wait ends: a thread queued since
            // before the window shows none of it, and "waited 0.0 ms" alone would say it never waited.
            if e.wallDelta - e.cpuTimeDelta - wait > e.wallDelta / 2 {
                text += " (a wait is counted once it ends: the one in progress is not in it)"
            }
        }
        if cpuBound {
            return StallCause(kind: .cpuBound, evidence: text)
        }
        if let runnable = e.runnableThreadCount, e.cores > 0, runnable > e.cores {
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
