import Foundation
import Logging
import Stallwatch
import Synchronization

/// Waits up to `timeout` for `condition`.
func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let end = clock.now + timeout
    while clock.now < end {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return condition()
}

/// A watchdog's events, as they come.
final class EventLog: Sendable {
    private let events = Mutex<[WatchdogEvent]>([])
    func append(_ event: WatchdogEvent) { events.withLock { $0.append(event) } }
    var errors: [String] { events.withLock { $0.compactMap { $0.kind == .error ? $0.message : nil } } }
    var stalls: [StallReport] { events.withLock { $0.compactMap { $0.kind == .stall ? $0.report : nil } } }
    var ended: [Duration] { events.withLock { $0.compactMap { $0.kind == .stallEnded ? $0.duration : nil } } }
}

/// The log lines a watchdog writes at error level and above, with their metadata.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    var errors: [String] { lines.withLock { $0 } }

    func handler() -> some LogHandler { Handler(lines: self) }

    private struct Handler: LogHandler {
        let lines: LogLines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            guard event.level >= .error else { return }
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            let text = "\(event.message) " + all.map { "\($0)=\($1)" }.joined(separator: " ")
            lines.lines.withLock { $0.append(text) }
        }
    }
}
