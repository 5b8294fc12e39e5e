import Glibc
import StallwatchPolicy

extension WatchdogEngine {
    /// Reports the feedback counters of a heartbeat loop that crossed their threshold since the
    /// last round: one `feedbackLoop` report each, blaming the call that crossed it.
    func reportFeedback(of probe: HeartbeatProbe) {
        for crossing in probe.takeFeedbackCrossings() {
            let since = probe.busySince ?? crossing.at
            let samples = crossing.stack.map { [builder.stackSample($0)] } ?? []
            let tree = CallTree(samples: samples)
            let thread = crossing.stack?.thread ?? probe.thread
            let report = StallReport(
                kind: .feedbackLoop,
                id: nextReportID(),
                cause: StallCause(kind: .cpuBound,
                                  evidence: "\"\(crossing.key)\" came round \(crossing.count) times in one busy period (threshold \(crossing.threshold))"),
                loopName: probe.name,
                thread: thread.map { builder.identity($0, info: try? ThreadInfo.read($0)) },
                startTimeUnixNanoseconds: MonotonicClock.unixNanoseconds(ofMonotonic: since),
                duration: crossing.at > since ? crossing.at - since : .zero,
                durationIsFinal: false,
                sampleCount: tree.sampleCount,
                blamedStack: ReportFrame.blamedStack(of: tree, describe: builder.describe),
                callTree: ReportCallTreeNode.flatten(tree, describe: builder.describe),
                threadCount: (try? ThreadList.count()) ?? 0,
                configuration: configuration,
                watchdogLateness: lateness)
            var withFacts = report
            withFacts.feedback = FeedbackFacts(key: crossing.key, count: crossing.count, threshold: crossing.threshold)
            logger.warning("feedback loop", metadata: [
                "loop": "\(probe.name)", "key": "\(crossing.key)", "count": "\(crossing.count)",
                "blamed": "\(withFacts.blamedSummary(frames: 1))", "id": "\(withFacts.id)"])
            writer?.submit(withFacts)
            emit(.feedbackLoop(withFacts))
        }
    }
}
