/// The scheduler's accounting for one thread, from `/proc/self/task/<tid>/schedstat`.
package struct ThreadSchedStat: Hashable, Sendable, Codable {
    /// Time the thread has spent on a CPU.
    package let runTime: Duration
    /// Time the thread has spent runnable, waiting on a run queue for a CPU.
    package let waitTime: Duration
    /// Number of times the thread was scheduled onto a CPU.
    package let timeslices: UInt64

    /// Creates a record from its parts.
    package init(runTime: Duration, waitTime: Duration, timeslices: UInt64) {
        self.runTime = runTime
        self.waitTime = waitTime
        self.timeslices = timeslices
    }
}
