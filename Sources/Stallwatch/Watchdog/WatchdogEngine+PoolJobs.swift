import StallwatchPolicy
import StallwatchReport

extension WatchdogEngine {
    /// The jobs holding the cooperative pool's workers now, for the report of the pool's stalled
    /// ping (`pinged`): each from its own pool-job loop — its report's blamed stack, id and cause
    /// when it was reported, else its newest sample and the cause read so far. Longest first.
    /// Read from the watchdog's own state: nothing here waits for the pool it describes.
    func poolJobStacks(for pinged: PingedLoopWatcher) -> [PoolJobStack]? {
        guard pinged.watchesCooperativePool, let poolWatcher else { return nil }
        let workerName = pinged.knownPoolWorkerName
        var jobs: [(since: MonotonicInstant, job: PoolJobStack)] = []
        for worker in poolWatcher.workersInJobs where workerName.map({ $0 == worker.name }) ?? true {
            guard let m = monitors[ObjectIdentifier(worker.probe)], let since = m.source.busySince else { continue }
            let identity = ThreadIdentity(id: worker.thread.rawValue, name: worker.name)
            var entry = PoolJobStack(thread: identity, startTimeUnixNanoseconds: MonotonicClock.unixNanoseconds(ofMonotonic: since),
                                     frames: [])
            if let report = m.detector.episode?.report {
                entry.reportID = report.id
                entry.cause = report.cause
                entry.frames = report.blamedStack
            } else {
                entry.cause = m.evidence.map { CauseClassifier(configuration: configuration).classify($0.evidence, observed: m.observedStates) }
                entry.frames = m.samples.last.map { builder.reportFrames($0) } ?? []
            }
            jobs.append((since, entry))
        }
        return jobs.isEmpty ? nil : jobs.sorted { $0.since < $1.since }.map(\.job)
    }

    /// A pool report made in the same round as its jobs' reports, but before them, listed those
    /// jobs without a report id: its final version links each job's report, in progress or just
    /// finished, when it began with the job (within a sampling interval or a ping period of the
    /// job's start, whichever is longer).
    func linkPoolJobReports(_ report: inout StallReport) {
        guard var jobs = report.poolJobs else { return }
        let slack = max(configuration.sampleInterval, schedule.pingPeriod).clampedNanoseconds
        for i in jobs.indices where jobs[i].reportID == nil {
            guard let start = jobs[i].startTimeUnixNanoseconds else { continue }
            // A pool thread's job monitor (the pool's own ping monitor names a worker too).
            for m in monitors.values where !m.ownsBusyRecord && m.source.thread?.rawValue == jobs[i].thread.id {
                let made = m.detector.episode?.report.map { ($0.id, $0.startTimeUnixNanoseconds) } ?? m.lastFinishedReport
                if let made, abs(made.1 - start) <= slack {
                    jobs[i].reportID = made.0
                    break
                }
            }
        }
        report.poolJobs = jobs
    }
}
