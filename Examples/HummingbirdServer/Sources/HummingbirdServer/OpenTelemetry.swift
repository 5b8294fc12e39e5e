import ServiceLifecycle
#if canImport(OTel)
import OTel
#endif

/// OpenTelemetry for the whole service, when `OTEL_EXPORTER_OTLP_ENDPOINT` is set: swift-otel
/// bootstrapped for logs, traces and metrics, exported over OTLP/HTTP. Stallwatch needs nothing of
/// its own for it: its stall lines are swift-log records, and the watchdog logs each one inside
/// the stalled request's `ServiceContext`, so the record carries that request's trace and span id;
/// the `stallwatch.stall` span goes through the bootstrapped tracer. Every other `OTEL_*`
/// variable is read by swift-otel (`OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_HEADERS`, ...).
///
/// Call it before the first `Logger` is made: a logger keeps the handler it was made with.
enum OpenTelemetry {
    #if canImport(OTel)
    /// The service that exports (run it in the `ServiceGroup`, first, so it stops last and sends
    /// the last lines), or `nil` when no endpoint is configured.
    static func bootstrapIfAsked(_ environment: [String: String]) throws -> (any Service)? {
        guard let endpoint = environment["OTEL_EXPORTER_OTLP_ENDPOINT"], !endpoint.isEmpty else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "hummingbird-server"   // OTEL_SERVICE_NAME overrides it
        return try OTel.bootstrap(configuration: configuration)
    }
    #endif
}
