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
    /// For a ping-probed loop that is not stalled: feeds its thread's demand for a core over the
    /// round, its ping latency and, while it is busy, one stack sample to its ``BusyLoopDetector``,
    /// and reports a `busyLoop` once per busy streak.
    func watchBusyLoop(_ m: LoopMonitor, pingLatency: Duration?, now: MonotonicInstant) {
        if let lag = pingLatency { m.busyLoopLag = max(m.busyLoopLag ?? lag, lag) }
        // Judged once per check period, whatever the round rate: rounds come every 40 ms for the
        // pings, and each judgement of a busy loop takes its stack with a signal.
        if let last = m.lastThreadDemand, now - last.at < configuration.checkPeriod { return }
        let pingLatency = m.busyLoopLag
        m.busyLoopLag = nil
        guard let detector = m.busyLoop, !m.inStall, let thread = m.source.thread,
              let demand = Self.demand(of: thread, in: m) else {
            finishBusyLoopReport(m, at: now)
            return
        }
        defer { m.lastThreadDemand = (thread, demand, now) }
        guard let last = m.lastThreadDemand, last.thread == thread, now > last.at else { return }
        defer { if !(m.busyLoop?.inStreak ?? false) { finishBusyLoopReport(m, at: last.at) } }
        let demandDelta = demand - last.demand
        let wall = now - last.at
        let busyNow = demandDelta.secondsDouble >= wall.secondsDouble * detector.busyFraction
        var sample: StackSample?
        // A stall's rounds wait for this capture: a thread inside one long system call answers no
        // signal, and at the sampler's own 100 ms timeout its stall was detected that much late
        // (a loop reading a large cached file in one call, reported 60–110 ms past its threshold).
        if maySignal, busyNow || (m.busyLoop?.inStreak ?? false),
           let stack = try? sampler.captureStack(of: thread, timeout: Self.busyLoopCaptureTimeout) {
            metricsSample(stack)
            sample = builder.identitySample(stack)
        }
        guard let verdict = m.busyLoop?.observe(now: now, demand: demandDelta, wall: wall, pingLatency: pingLatency,
                                                sample: sample),
              case .report(let busyFor, let path, let count) = verdict else { return }
        let report = builder.busyLoopReport(id: nextReportID(), loopName: m.source.name, thread: gatherer.identity(thread),
                                            busyFor: busyFor,
                                            demandPercent: Int(demandDelta.secondsDouble / wall.secondsDouble * 100),
                                            path: path, count: count, now: now, lateness: lateness,
                                            threadCount: gatherer.threadCount())
        m.openBusyLoopReport = (report, now - busyFor)
        logger.warning("busy loop", metadata: [
            "loop": "\(m.source.name)", "busyFor": "\(busyFor)", "blamed": "\(report.blamedSummary(frames: 1))",
            "id": "\(report.id)"])
        writer?.submit(report)
        emit(.busyLoop(report))
    }

    /// How long a busy-loop judgement waits for its thread's answer before the kernel samples it.
    static let busyLoopCaptureTimeout = Duration.milliseconds(20)

    /// Time `thread` has wanted a core: on one plus runnable on a run queue (`schedstat`), or its CPU
    /// clock alone where the kernel keeps no scheduler statistics.
    private static func demand(of thread: ThreadID, in m: LoopMonitor) -> Duration? {
        if m.demandFiles?.tid != thread { m.demandFiles = TaskFiles(thread) }
        var run: UInt64 = 0, wait: UInt64 = 0, slices: UInt64 = 0
        if let files = m.demandFiles, files.schedstat(run: &run, wait: &wait, timeslices: &slices) == 0 {
            return .nanoseconds(Int64(clamping: run &+ wait))
        }
        return try? ThreadCPUClock(thread).elapsed()
    }

    private func metricsSample(_ stack: CapturedStack) {
        metrics?.recordSamples(count: 1, handlerTime: stack.handlerTime)
    }

    /// Makes a busy-loop report final once its streak is over (or the loop is no longer
    /// watched), with the streak's length up to `end`, the last round that saw it busy.
    func finishBusyLoopReport(_ m: LoopMonitor, at end: MonotonicInstant) {
        guard let open = m.openBusyLoopReport else { return }
        m.openBusyLoopReport = nil
        var report = open.report
        report.durationNanoseconds = (end > open.start ? end - open.start : .zero).clampedNanoseconds
        report.durationIsFinal = true
        report.sequenceInStall += 1
        writer?.submit(report)
    }
}
