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
        defer {
            lastProcessCPU = cpu
            lastCPUAt = now
        }
        guard let last = lastProcessCPU, let at = lastCPUAt else { return }
        let cores = OnlineCPUs.count
        let wall = now - at
        let processDelta = cpu - last
        lastProcessCPUCores = wall > .zero ? processDelta / wall : nil
        // Per-thread figures only when the process is busy enough for them to matter.
        var threads: [ThreadCPUTime] = []
        if wall > .zero, processDelta / wall > configuration.cpu.processHighFraction * Double(cores) * 0.9 {
            threads = threadCPUDeltas()
        }
        let assessment = cpuPolicy.ingest(CPUReading(processCPUTimeDelta: processDelta, wallDelta: wall,
                                                     cores: cores, threads: threads))
        for event in assessment.events {
            deliver(builder.cpuReport(id: nextReportID(), event: event, windowStart: at, wall: wall, now: now, cores: cores,
                                      threadCount: gatherer.threadCount()))
        }
    }

    private func threadCPUDeltas() -> [ThreadCPUTime] {
        guard let tids = try? ThreadList.current() else { return [] }
        var current: [Int32: Duration] = [:]
        var out: [ThreadCPUTime] = []
        for tid in tids {
            guard let cpu = try? ThreadCPUClock(tid).elapsed() else { continue }
            current[tid.rawValue] = cpu
            if let before = lastThreadCPU[tid.rawValue] {
                let name = (try? ThreadInfo.read(tid).name) ?? ""
                out.append(ThreadCPUTime(threadID: tid.rawValue, name: name, cpuTimeDelta: cpu - before))
            }
        }
        lastThreadCPU = current
        return out
    }
}
