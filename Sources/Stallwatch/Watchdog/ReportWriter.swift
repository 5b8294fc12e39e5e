import Dispatch
import Logging
import StallwatchPolicy
import StallwatchReport
import Synchronization

/// Writes reports on a queue of its own, so the watchdog never waits on the disk (a write syncs the
/// file and the directory, then prunes it). A report submitted again with the same id replaces its
/// earlier file atomically: that is how a stall's report gets its final duration.
final class ReportWriter: Sendable {
    private let store: ReportStore
    private let queue = DispatchQueue(label: "stallwatch.report-writer", qos: .utility)
    // Report id -> file written for it, while the stall may still be updated. Touched on `queue` only;
    // the Mutex is what makes the class Sendable, never contended.
    private let paths = Mutex<[String: String]>([:])
    /// Reports submitted and not yet taken by the queue, oldest first. The queue takes the list and
    /// leaves an empty one of the same capacity behind (allocated on its thread), so the watchdog's
    /// submission appends without allocating. Holds only what was submitted since the queue last
    /// ran: a handful of reports, as many as the stalls of those few milliseconds brought.
    private let pending = Mutex<[StallReport]>([])
    /// Wakes the queue to write `pending`: merging into a user-data source allocates nothing, where
    /// an `async` block cost its context, its block copy and dispatch's continuation on every report.
    private let wakeup: WriterWakeup
    private let logger: Logger
    private let onError: @Sendable (String) -> Void

    init(store: ReportStore, logger: Logger, onError: @escaping @Sendable (String) -> Void) {
        self.store = store
        self.logger = logger
        self.onError = onError
        wakeup = WriterWakeup(queue: queue)
        pending.withLock { $0.reserveCapacity(8) }
        wakeup.start { [weak self] in self?.writePending() }
    }

    /// Writes what is still pending: a watchdog stopped from its own event handler is not flushed
    /// (its thread cannot wait for itself), and its last reports, the final ones of stalls it cut
    /// short, may be submitted just before the writer goes. The wake-up's handler holds the writer
    /// only weakly and a flush strongly, so nothing else can be writing now.
    deinit {
        wakeup.stop()
        writePending()
    }

    /// Queues `report`; returns at once. A final report (``StallReport/durationIsFinal``) closes its id.
    func submit(_ report: StallReport) {
        pending.withLock { $0.append(report) }
        wakeup.signal()
    }

    /// Writes every report submitted so far, in order. Runs on `queue` only.
    private func writePending() {
        let batch = pending.withLock { list -> [StallReport] in
            let taken = list
            list.removeAll(keepingCapacity: true)
            return taken
        }
        for report in batch { write(report) }
    }

    private func write(_ report: StallReport) {
        let previous = paths.withLock { $0[report.id] }
        do {
            let path = try store.write(report, replacing: previous)
            paths.withLock { p in
                if report.durationIsFinal { p[report.id] = nil } else { p[report.id] = path }
            }
        } catch {
            logger.error("cannot write stall report", metadata: ["id": "\(report.id)", "error": "\(error)"])
            onError("cannot write stall report \(report.id): \(error)")
        }
    }

    /// Waits until every report submitted so far is written, at most `timeout`. Returns whether it
    /// finished in time.
    @discardableResult
    func flush(timeout: Duration = .seconds(5)) -> Bool {
        // Written here rather than left to the wake-up source: its handler may not be queued yet.
        queue.runAndWait(atMost: timeout) { [self] in writePending() }
    }
}
