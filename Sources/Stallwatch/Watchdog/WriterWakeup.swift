import Dispatch

/// The wake-up of a queue the watchdog hands work to (``ReportWriter``'s, ``WatchdogLogQueue``'s):
/// a user-data source on that queue. Signals that arrive before the handler runs are merged into
/// one run, and a signal allocates nothing.
final class WriterWakeup: @unchecked Sendable {
    // @unchecked: the source is only ever signalled, started and stopped, all of which dispatch
    // allows from any thread; it has no other state.
    private let source: any DispatchSourceUserDataAdd

    init(queue: DispatchQueue) {
        source = DispatchSource.makeUserDataAddSource(queue: queue)
    }

    /// Runs `handler` on the queue after each burst of signals.
    func start(_ handler: @escaping @Sendable () -> Void) {
        source.setEventHandler(handler: handler)
        source.activate()
    }

    func signal() {
        source.add(data: 1)
    }

    func stop() {
        source.cancel()
    }
}
