#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import StallwatchPolicy
import StallwatchReport

extension WatchdogEngine {
    // MARK: - CPU policy

    /// Process CPU is judged over whole seconds, whatever the check period (matrix's periods are
    /// seconds long; a 40 ms window after an early wake-up says nothing).
    func cpuRound(now _: MonotonicInstant) {
        let now = MonotonicClock.now()
        if let at = lastCPUAt, now - at < .seconds(1) { return }
        guard let cpu = try? ProcessCPUClock().elapsed() else { return }
        // At every reading, busy or not: the reading that first finds the process busy needs each
        // thread's time at the one before (taken only once busy, the first CPU-high event named no
        // thread). A listing and a clock read per thread, once a second at most.
        let threads = threadCPUDeltas(now: now)
        defer {
            lastProcessCPU = cpu
            lastCPUAt = now
        }
        guard let last = lastProcessCPU, let at = lastCPUAt else { return }
        let cores = OnlineCPUs.count
        let wall = now - at
        let processDelta = cpu - last
        lastProcessCPUCores = wall > .zero ? processDelta / wall : nil
        let assessment = cpuPolicy.ingest(CPUReading(processCPUTimeDelta: processDelta, wallDelta: wall,
                                                     cores: cores, threads: threads))
        for event in assessment.events {
            let (named, unnamed) = Self.namingThreads(of: event)
            let gap = threadCPUUnread ?? (unnamed > 0 ? "\(unnamed) of its top threads exited before they were named" : nil)
            deliver(builder.cpuReport(id: nextReportID(), event: named, windowStart: at, wall: wall, now: now, cores: cores,
                                      threadCount: gatherer.threadCount(), threadsUnread: gap))
        }
    }

    /// Each thread's CPU time since the last reading (``ThreadCPUBaseline``): a clock read per
    /// thread. Names are read only for the threads an event names (``namingThreads(of:)``): a
    /// /proc read each, every second while the process was busy, was 0.5 ms of the watchdog's CPU
    /// a second for 10 threads under wrk.
    private func threadCPUDeltas(now: MonotonicInstant) -> [ThreadCPUTime] {
        do {
            try cpuRoster.refresh(now: now)
        } catch {
            threadCPUBaseline.reset()
            threadCPUUnread = "its threads could not be listed (\(error))"
            return []
        }
        threadCPUTimes.removeAll(keepingCapacity: true)
        for tid in cpuRoster.threads {
            guard let cpu = try? ThreadCPUClock(tid).elapsed() else { continue }
            threadCPUTimes.append((tid.rawValue, cpu))
        }
        let deltas = threadCPUBaseline.take(threadCPUTimes)
        // The first reading after a failed listing only re-bases: its gap stays said until then.
        if !deltas.isEmpty { threadCPUUnread = nil }
        return deltas
    }

    /// The event with its top threads' names read now, and how many had exited by then (each
    /// keeps an empty name).
    private static func namingThreads(of event: CPUEvent) -> (CPUEvent, unnamed: Int) {
        guard case .processCPUHigh(let usage, var top) = event else { return (event, 0) }
        var unnamed = 0
        for i in top.indices {
            if let name = try? ThreadInfo.read(ThreadID(rawValue: top[i].threadID)).name {
                top[i].name = name
            } else {
                top[i].name = ""
                unnamed += 1
            }
        }
        return (.processCPUHigh(usage: usage, topThreads: top), unnamed)
    }
}
