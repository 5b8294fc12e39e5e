import Glibc
import StallwatchPolicy

extension WatchdogEngine {
    /// Reports the feedback counters of a heartbeat loop that crossed their threshold since the
    /// last round: one `feedbackLoop` report each, blaming the call that crossed it.
    func reportFeedback(of probe: HeartbeatProbe) {
        for crossing in probe.takeFeedbackCrossings() {
            let since = probe.busySince ?? crossing.at
            let withFacts = builder.feedbackReport(id: nextReportID(), loopName: probe.name, crossing: crossing, since: since,
                                                   thread: crossing.stack?.thread ?? probe.thread, lateness: lateness)
            logger.warning("feedback loop", metadata: [
                "loop": "\(probe.name)", "key": "\(crossing.key)", "count": "\(crossing.count)",
                "blamed": "\(withFacts.blamedSummary(frames: 1))", "id": "\(withFacts.id)"])
            writer?.submit(withFacts)
            emit(.feedbackLoop(withFacts))
        }
    }
}
