/// Each thread's CPU time at the last reading, and what each used since: the per-thread part of a
/// ``CPUReading``. Taken at every reading, busy or not, so that the reading that first finds the
/// process busy has something to compare with (taken only once busy, the first CPU-high event
/// named no thread).
package struct ThreadCPUBaseline: Sendable, Equatable {
    private var last: [Int32: Duration] = [:]
    private var taken = false

    /// An empty baseline: its first reading gives nothing.
    package init() {}

    /// Takes this reading's times (every thread listed now, with its CPU clock) and returns each
    /// thread's time since the previous reading. A thread the previous reading did not list was
    /// born since, so all of its time falls in the window; a thread gone since is left out.
    package mutating func take(_ times: [(threadID: Int32, cpu: Duration)]) -> [ThreadCPUTime] {
        var current: [Int32: Duration] = [:]
        current.reserveCapacity(times.count)
        var out: [ThreadCPUTime] = []
        for (tid, cpu) in times {
            current[tid] = cpu
            guard taken else { continue }
            // Names are the caller's to read, for the few threads an event names.
            out.append(ThreadCPUTime(threadID: tid, name: "", cpuTimeDelta: max(cpu - (last[tid] ?? .zero), .zero)))
        }
        last = current
        taken = true
        return out
    }

    /// Forgets every thread's time (the threads could not be listed): the next reading gives nothing.
    package mutating func reset() {
        last = [:]
        taken = false
    }
}
