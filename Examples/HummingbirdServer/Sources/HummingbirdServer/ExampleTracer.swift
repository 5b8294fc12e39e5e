import Foundation
import Hummingbird
import InMemoryTracing
import Tracing

/// A test aid, not a pattern for production: with `STALLWATCH_EXAMPLE_TRACER=memory` the example
/// bootstraps swift-distributed-tracing's in-memory tracer, and `GET /debug/spans` answers with the
/// spans it has finished (JSON), so the end-to-end test can check that a stall reached its
/// request's trace. A service bootstraps its real tracer (swift-otel) instead; nothing else changes.
struct ExampleTracer {
    let tracer: InMemoryTracer

    /// The in-memory tracer, bootstrapped, when the environment asks for it.
    static func bootstrapIfAsked(_ environment: [String: String]) -> ExampleTracer? {
        guard environment["STALLWATCH_EXAMPLE_TRACER"] == "memory" else { return nil }
        // Injections and extractions are not recorded: the log would grow with every request.
        let tracer = InMemoryTracer(recordInjections: false, recordExtractions: false)
        InstrumentationSystem.bootstrap(tracer)
        return ExampleTracer(tracer: tracer)
    }

    /// `GET /debug/spans`: `[{"operation", "traceID", "spanID", "parentSpanID", "events": [{"name",
    /// "attributes"}], "attributes"}]`, attributes as strings.
    func addRoutes(to router: Router<BasicRequestContext>) {
        router.get("/debug/spans") { _, _ -> Response in
            let spans: [[String: Any]] = tracer.finishedSpans.map { span in
                [
                    "operation": span.operationName, "traceID": span.traceID, "spanID": span.spanID,
                    "parentSpanID": span.parentSpanID ?? "",
                    "attributes": Self.strings(span.attributes),
                    "events": span.events.map { ["name": $0.name, "attributes": Self.strings($0.attributes)] },
                ]
            }
            let data = try JSONSerialization.data(withJSONObject: spans)
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
    }

    private static func strings(_ attributes: SpanAttributes) -> [String: String] {
        var out: [String: String] = [:]
        attributes.forEach { key, value in out[key] = "\(value)" }
        return out
    }
}
