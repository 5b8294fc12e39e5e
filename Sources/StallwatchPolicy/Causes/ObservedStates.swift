import StallwatchReport
/// What a stalled thread was seen doing at each check of one episode: one snapshot of `/proc` can
/// land in the moment a thread doing storage I/O is runnable (page copies, writeback between
/// waits) and read as starved; the episode's tally says it spent its time in uninterruptible waits.
package struct ObservedStates: Sendable, Equatable {
    /// Checks that saw the thread in each scheduler state.
    package private(set) var counts: [Character: Int] = [:]
    /// The system call of the newest check that saw the thread in state D.
    package private(set) var lastUninterruptibleSyscall: Int?

    package init() {}

    package mutating func note(_ e: ThreadEvidence) {
        counts[e.state, default: 0] += 1
        if e.state == "D", let call = e.syscall { lastUninterruptibleSyscall = call }
    }

    package var total: Int { counts.values.reduce(0, +) }
}

extension CauseClassifier {
    /// Classifies the newest evidence, corrected by the episode's tally: a thread runnable now with
    /// little CPU (starved, or too many threads) that spent at least as many checks in state D as
    /// runnable was waiting on storage, not on a CPU.
    package func classify(_ e: ThreadEvidence, observed: ObservedStates) -> StallCause {
        let now = classify(e)
        guard now.kind == .starved || now.kind == .tooManyThreads else { return now }
        let d = observed.counts["D", default: 0]
        let r = observed.counts["R", default: 0]
        guard d > 0, d >= r else { return now }
        var waiting = e
        waiting.state = "D"
        waiting.syscall = observed.lastUninterruptibleSyscall
        var cause = classify(waiting)
        cause.evidence += "; state D in \(d) of \(observed.total) checks during the stall (runnable at the last, \(r) runnable in all)"
        return cause
    }
}
