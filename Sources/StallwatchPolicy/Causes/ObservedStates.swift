import StallwatchReport
/// What a stalled thread was seen doing at each check of one episode: one snapshot of `/proc` can
/// land in the moment a thread doing storage I/O is runnable (page copies, writeback between
/// waits) and read as starved; the episode's tally says it spent its time in uninterruptible waits.
package struct ObservedStates: Sendable, Equatable {
    /// Checks that saw the thread in each scheduler state.
    package private(set) var counts: [Character: Int] = [:]
    /// The system call of the newest check that saw the thread in state D.
    package private(set) var lastUninterruptibleSyscall: Int?
    /// The system call of the newest check that saw the thread asleep (state S) in one.
    package private(set) var lastSleepingSyscall: Int?
    /// Checks that saw the thread asleep (state S) inside a system call.
    package private(set) var sleepingInSyscall = 0

    package init() {}

    package mutating func note(_ e: ThreadEvidence) {
        counts[e.state, default: 0] += 1
        if e.state == "D", let call = e.syscall { lastUninterruptibleSyscall = call }
        if e.state == "S", let call = e.syscall {
            lastSleepingSyscall = call
            sleepingInSyscall += 1
        }
    }

    package var total: Int { counts.values.reduce(0, +) }
}

extension CauseClassifier {
    /// Classifies the newest evidence, corrected by the episode's tally: a thread runnable now with
    /// little CPU (starved, too many threads, or CPU-bound at its fair share of a busy box) that spent at least as many checks in state D as
    /// runnable was waiting on storage, not on a CPU; one that spent them asleep in a system call
    /// was waiting in that call.
    package func classify(_ e: ThreadEvidence, observed: ObservedStates) -> StallCause {
        let now = classify(e)
        // Runnable under the CPU-bound floor, whatever its share made of it (a thread in an fsync
        // loop that got its fair share of a loaded box is still waiting on storage).
        guard e.looksStarved(cpuBoundFraction: cpuBoundFraction) else { return now }
        let d = observed.counts["D", default: 0]
        let r = observed.counts["R", default: 0]
        if d > 0, d >= r {
            var waiting = e
            waiting.state = "D"
            waiting.syscall = observed.lastUninterruptibleSyscall
            var cause = classify(waiting)
            cause.evidence += "; state D in \(d) of \(observed.total) checks during the stall (runnable at the last, \(r) runnable in all)"
            return cause
        }
        // Asleep in a system call in most checks, runnable with little CPU at the last: the newest
        // check caught it waking from that sleep (CI once saw a 1.5 s usleep on an event loop
        // called "too many threads" that way), so the sleep is the cause.
        let s = observed.sleepingInSyscall
        guard s > 0, s >= r, let call = observed.lastSleepingSyscall else { return now }
        var asleep = e
        asleep.state = "S"
        asleep.syscall = call
        var cause = classify(asleep)
        cause.evidence += "; asleep in a system call in \(s) of \(observed.total) checks during the stall (runnable at the last, \(r) runnable in all)"
        return cause
    }
}
