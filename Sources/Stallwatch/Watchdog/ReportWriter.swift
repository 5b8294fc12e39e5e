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
    private let logger: Logger
    private let onError: @Sendable (String) -> Void

    init(store: ReportStore, logger: Logger, onError: @escaping @Sendable (String) -> Void) {
        self.store = store
        self.logger = logger
        self.onError = onError
    }

    /// Queues `report`; returns at once. A final report (``StallReport/durationIsFinal``) closes its id.
    func submit(_ report: StallReport) {
        queue.async { [self] in
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
    }

    /// Waits until every report submitted so far is written, at most `timeout`. Returns whether it
    /// finished in time.
    @discardableResult
    func flush(timeout: Duration = .seconds(5)) -> Bool {
        let done = DispatchSemaphore(value: 0)
        queue.async { done.signal() }
        return done.wait(timeout: .now() + .nanoseconds(Int(clamping: timeout.clampedNanoseconds))) == .success
    }
}
