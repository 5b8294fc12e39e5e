import StallwatchPolicy
import StallwatchReport
import Synchronization
import Tracing

/// Puts each attributed stall on its request's trace: a `stallwatch.stall` span, a child of the
/// request's span (its `ServiceContext`), started at the stall's start with a `stallwatch.stall`
/// event when the stall is reported, and ended with the stall when its final report is made. Made
/// through the bootstrapped tracer (`InstrumentationSystem.tracer`), so swift-otel exports it as
/// OTLP. A child span rather than an event on the request's own span: a tracer hands no span out
/// of a context, and the request's span may have ended before the stall's final report.
final class StallSpans: Sendable {
    /// Spans open at once (stalls reported, not yet final); beyond it the oldest is ended as is.
    static let maxOpen = 64

    private let open = Mutex<[(id: String, span: any Span)]>([])

    /// A stall report was made or rewritten: starts the stall's span when its request is known
    /// (and has a trace), ends it when `report` is final.
    func reported(_ report: StallReport, entry: RequestEntry?) {
        guard report.kind == .stall, let request = report.request else { return }
        var started: (any Span)?
        var evicted: (any Span)?
        let existing: (any Span)? = open.withLock { spans in
            spans.first { $0.id == report.id }?.span
        }
        if existing == nil {
            guard let context = entry?.context, request.traceID != nil else { return }
            let span = InstrumentationSystem.tracer.startSpan(
                "stallwatch.stall", context: context, ofKind: .internal,
                at: UnixInstant(nanoseconds: report.startTimeUnixNanoseconds))
            span.attributes = Self.attributes(of: report)
            span.addEvent(SpanEvent(name: StallTelemetry.stallEvent, attributes: Self.attributes(of: report)))
            started = span
            Self.mark(entry?.span, report, ended: false)
            open.withLock { spans in
                spans.append((report.id, span))
                if spans.count > Self.maxOpen { evicted = spans.removeFirst().span }
            }
        }
        evicted?.end()
        guard report.durationIsFinal, let span = existing ?? started else { return }
        open.withLock { spans in spans.removeAll { $0.id == report.id } }
        span.attributes = Self.attributes(of: report)
        if existing != nil {
            span.addEvent(SpanEvent(name: StallTelemetry.endedEvent, attributes: Self.attributes(of: report)))
        }
        Self.mark(entry?.span, report, ended: true)
        span.end(at: UnixInstant(nanoseconds: report.startTimeUnixNanoseconds &+ report.durationNanoseconds))
    }

    /// The request's own span, when its caller handed it over and it is still open: the stall's
    /// event on it, and `stallwatch.stalled` with the report's id among its attributes.
    private static func mark(_ requestSpan: (any Span)?, _ report: StallReport, ended: Bool) {
        guard let requestSpan, requestSpan.isRecording else { return }
        let attributes = Self.attributes(of: report, ended: ended)
        requestSpan.addEvent(SpanEvent(name: ended ? StallTelemetry.endedEvent : StallTelemetry.stallEvent,
                                       attributes: attributes))
        requestSpan.attributes["stallwatch.stalled"] = true
        requestSpan.attributes["stallwatch.report_id"] = report.id
    }

    /// The stall's attributes (``StallTelemetry``, as its log records carry them), numbers and
    /// flags as such.
    static func attributes(of report: StallReport, ended: Bool = false) -> SpanAttributes {
        let facts = StallTelemetry(report, ended: ended)
        var a: SpanAttributes = [:]
        for (key, value) in facts.attributes where key != "event.name" { a[key] = value }
        a["stallwatch.duration_ms"] = facts.durationMilliseconds
        a["stallwatch.final"] = facts.final
        a["stallwatch.truncated"] = facts.truncated
        if let id = facts.threadID { a["thread.id"] = Int(id) }
        return a
    }
}

/// A wall-clock instant for the tracer: the stall's start and end as the report states them.
struct UnixInstant: TracerInstant {
    var nanosecondsSinceEpoch: UInt64

    init(nanoseconds: Int64) {
        nanosecondsSinceEpoch = UInt64(max(nanoseconds, 0))
    }

    static func < (lhs: UnixInstant, rhs: UnixInstant) -> Bool {
        lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch
    }
}
