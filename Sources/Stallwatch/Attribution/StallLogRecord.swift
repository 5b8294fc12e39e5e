import Logging
import StallwatchReport
import Tracing

/// A stall's log record (one when it is reported, one when it ends), made on the log queue rather
/// than on the watchdog thread: its body and attributes are a dozen strings, and the watchdog
/// thread keeps to its allocation budget.
///
/// It is written inside the stalled request's `ServiceContext`: a log handler that reads the
/// current context (swift-otel's puts its trace and span id on the OTLP record) links the record
/// to the request's trace, although the watchdog is no part of that request.
struct StallLogRecord: Sendable {
    var report: StallReport
    var ended: Bool
    /// The stalled request's context, when a request was named.
    var context: ServiceContext?

    static let level = Logger.Level.warning

    /// The swift-log event: the readable line as its message, the facts as metadata, and the
    /// blamed function and its module as the event's function and file (so a handler that records
    /// where a line comes from, as swift-otel's does with `code.*`, names the stalled code).
    var event: LogEvent {
        let facts = StallTelemetry(report, ended: ended)
        var metadata: Logger.Metadata = [:]
        for (key, value) in facts.attributes { metadata[key] = .string(value) }
        return LogEvent(level: Self.level, message: "\(facts.body)", metadata: metadata, source: "Stallwatch",
                        file: facts.module ?? "?", function: facts.function ?? "?", line: 0)
    }

    /// Writes the record to `handler`, in the request's context when there is one.
    func write(to handler: any LogHandler) {
        let event = event
        if let context {
            ServiceContext.withValue(context) { handler.log(event: event) }
        } else {
            handler.log(event: event)
        }
    }
}
