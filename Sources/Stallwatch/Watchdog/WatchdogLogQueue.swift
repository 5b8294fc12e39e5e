import Dispatch
import Logging
import Synchronization

/// Hands the watchdog's log lines to the service's log handler from a queue of their own.
///
/// A log handler may block: stderr piped to a collector that stopped reading fills its pipe, and
/// the write then waits for as long as the collector does. On the watchdog thread that would stop
/// detection exactly when a service is most likely stalling (on that same logging), and a handler's
/// formatting (metadata merged, a timestamp, strings joined) cost about 17 allocations per line on
/// the thread that must not allocate. Here the watchdog only appends the event to a list
/// with room kept for it, and the queue calls the handler.
final class WatchdogLogQueue: Sendable {
    /// Lines waiting for the queue beyond this are dropped and counted (one error line says how
    /// many once the handler keeps up again): a handler blocked for good must not grow memory.
    static let limit = 1024

    /// A line as posted: made already, or a stall's record, made on the queue (see ``StallLogRecord``).
    enum Line: Sendable {
        case made(LogEvent)
        case stall(StallLogRecord)

        func write(to handler: any LogHandler) {
            switch self {
            case .made(let event): handler.log(event: event)
            case .stall(let record): record.write(to: handler)
            }
        }
    }

    private struct Pending {
        var lines: [(line: Line, handler: any LogHandler)] = []
        var dropped = 0
    }

    private let queue = DispatchQueue(label: "stallwatch.log", qos: .utility)
    /// What the watchdog posted and the queue has not taken yet. The queue takes the list and leaves
    /// an empty one of the same capacity behind (allocated on its own thread), as ``ReportWriter``
    /// does, so a post appends without allocating.
    private let pending = Mutex(Pending())
    private let wakeup: WriterWakeup

    init() {
        wakeup = WriterWakeup(queue: queue)
        pending.withLock { $0.lines.reserveCapacity(16) }
        wakeup.start { [weak self] in self?.writePending() }
    }

    /// Writes what is still pending (see ``ReportWriter``'s deinit for why nothing else can be
    /// writing now).
    deinit {
        wakeup.stop()
        writePending()
    }

    /// Queues `event` for `handler`; returns at once.
    func post(_ event: LogEvent, to handler: any LogHandler) {
        post(.made(event), to: handler)
    }

    /// Queues `line` for `handler`; returns at once.
    func post(_ line: Line, to handler: any LogHandler) {
        pending.withLock { p in
            if p.lines.count < Self.limit { p.lines.append((line, handler)) } else { p.dropped += 1 }
        }
        wakeup.signal()
    }

    /// Calls the handler for every line posted so far, in order. Runs on `queue` (or in deinit).
    private func writePending() {
        let (batch, dropped) = pending.withLock { p -> ([(line: Line, handler: any LogHandler)], Int) in
            let taken = (p.lines, p.dropped)
            p.lines.removeAll(keepingCapacity: true)
            p.dropped = 0
            return taken
        }
        for entry in batch { entry.line.write(to: entry.handler) }
        if dropped > 0, let last = batch.last {
            last.handler.log(event: LogEvent(
                level: .error,
                message: "\(dropped) Stallwatch log lines dropped: the log handler did not keep up",
                metadata: nil, source: "Stallwatch", file: #fileID, function: #function, line: #line))
        }
    }

    /// Waits until every line posted so far went to its handler, at most `timeout`. Returns whether
    /// it finished in time (a handler that blocks keeps its lines).
    @discardableResult
    func flush(timeout: Duration = .seconds(5)) -> Bool {
        queue.runAndWait(atMost: timeout) { [self] in writePending() }
    }
}

/// A log handler that posts each line to a ``WatchdogLogQueue`` for the handler it wraps. Level and
/// metadata are the wrapped handler's, so a line below the service's level costs nothing.
struct QueuedLogHandler: LogHandler {
    var wrapped: any LogHandler
    let queue: WatchdogLogQueue

    var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        queue.post(event, to: wrapped)
    }
}

extension Logger {
    /// Logs a stall's record: posted to the queue when this logger writes through one (made and
    /// written there), else made and written here. Nothing when the level leaves warnings out.
    func log(_ record: StallLogRecord) {
        guard logLevel <= StallLogRecord.level else { return }
        if let queued = handler as? QueuedLogHandler {
            queued.queue.post(.stall(record), to: queued.wrapped)
        } else {
            record.write(to: handler)
        }
    }

    /// This logger with its lines written from `queue` (see ``WatchdogLogQueue``).
    func writing(through queue: WatchdogLogQueue) -> Logger {
        var logger = self
        logger.handler = QueuedLogHandler(wrapped: handler, queue: queue)
        return logger
    }
}
