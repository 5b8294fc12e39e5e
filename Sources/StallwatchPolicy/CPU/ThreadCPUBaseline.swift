/// Each thread's CPU time at the last reading, and what each used since: the per-thread part of a
/// ``CPUReading``. Taken at every reading, busy or not, so that the reading that first finds the
/// process busy has something to compare with (taken only once busy, the first CPU-high event
/// named no thread).
package struct ThreadCPUBaseline: Sendable, Equatable {
    private var last: [Int32: Duration] = [:]
    private var taken = false
    // Storage kept from reading to reading: once it held as many threads as the process has, a
    // reading allocates nothing (the watchdog's idle rounds allocate nothing).
    private var scratch: [Int32: Duration] = [:]
    private var out: [ThreadCPUTime] = []

    /// An empty baseline: its first reading gives nothing.
    package init() {}

    /// Takes this reading's times (every thread listed now, with its CPU clock) and returns each
    /// thread's time since the previous reading. A thread the previous reading did not list was
    /// born since, so all of its time falls in the window; a thread gone since is left out.
    package mutating func take(_ times: [(threadID: Int32, cpu: Duration)]) -> [ThreadCPUTime] {
        scratch.removeAll(keepingCapacity: true)
        out.removeAll(keepingCapacity: true)
        for (tid, cpu) in times {
            scratch[tid] = cpu
            guard taken else { continue }
            // Names are the caller's to read, for the few threads an event names.
            out.append(ThreadCPUTime(threadID: tid, name: "", cpuTimeDelta: max(cpu - (last[tid] ?? .zero), .zero)))
        }
        swap(&last, &scratch)
        taken = true
        return out
    }

    /// Forgets every thread's time (the threads could not be listed): the next reading gives nothing.
    package mutating func reset() {
        last.removeAll(keepingCapacity: true)
        taken = false
    }
}
