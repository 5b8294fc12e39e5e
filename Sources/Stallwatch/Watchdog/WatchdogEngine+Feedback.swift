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
    /// Reports the feedback counters of a heartbeat loop that crossed their threshold since the
    /// last round: one `feedbackLoop` report each, blaming the call that crossed it.
    func reportFeedback(of probe: HeartbeatProbe, in m: LoopMonitor) {
        finishFeedbackReports(of: probe, in: m, now: MonotonicClock.now())
        for crossing in probe.takeFeedbackCrossings() {
            let since = crossing.busySince ?? crossing.at
            let withFacts = builder.feedbackReport(id: nextReportID(), loopName: probe.name, crossing: crossing, since: since,
                                                   thread: (crossing.stack?.thread ?? probe.thread).map { gatherer.identity($0) },
                                                   lateness: lateness, threadCount: gatherer.threadCount())
            logger.warning("feedback loop", metadata: [
                "loop": "\(probe.name)", "key": "\(crossing.key)", "count": "\(crossing.count)",
                "blamed": "\(withFacts.blamedSummary(frames: 1))", "id": "\(withFacts.id)"])
            writer?.submit(withFacts)
            emit(.feedbackLoop(withFacts))
            m.openFeedbackReports.append((withFacts, since, crossing.period))
        }
    }

    /// Makes the feedback reports of a busy period final once it is over (or the loop is no longer
    /// watched): the whole busy period's length, ending where the loop went idle.
    func finishFeedbackReports(of probe: HeartbeatProbe, in m: LoopMonitor, now: MonotonicInstant, cutShort: Bool = false) {
        m.openFeedbackReports.removeAll { open in
            let over = cutShort || probe.busySince == nil || probe.busyPeriod != open.period
            guard over else { return false }
            let end = probe.end(ofPeriodSince: open.since) ?? now
            var report = open.report
            report.durationNanoseconds = (end > open.since ? end - open.since : .zero).clampedNanoseconds
            report.durationIsFinal = true
            report.sequenceInStall += 1
            writer?.submit(report)
            return true
        }
    }
}
