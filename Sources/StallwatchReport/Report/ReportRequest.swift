/// The request a stalled job or loop tick was serving, as the application registered it with
/// `StallAttribution` (Stallwatch): absent from a report when the stalled code served none.
///
/// Only the stalled thread's own request is named: the signal handler reads the request tag of the
/// task (or thread) it interrupted, so requests in flight on other threads are never charged.
public struct ReportRequest: Sendable, Equatable, Codable {
    /// The HTTP method (or another verb the application chose), e.g. `GET`.
    public var method: String
    /// The route pattern, not the concrete path (e.g. `/users/:id`): a label that stays bounded.
    public var route: String
    /// The trace id of the request's `ServiceContext` (hex, as its tracer propagates it); absent
    /// without tracing.
    public var traceID: String?
    /// The span id of the request's span when the request was registered (hex); absent without
    /// tracing.
    public var spanID: String?
    /// Samples of the stall taken while the request was being served, of ``StallReport/sampleCount``.
    public var sampleCount: Int

    /// A request's facts.
    public init(method: String, route: String, traceID: String? = nil, spanID: String? = nil, sampleCount: Int = 0) {
        self.method = method
        self.route = route
        self.traceID = traceID
        self.spanID = spanID
        self.sampleCount = sampleCount
    }

    /// `GET /users/:id trace 4bf9…` in one short line.
    public var summary: String {
        var line = "\(method) \(route)"
        if let traceID { line += " trace \(traceID)" }
        if let spanID { line += " span \(spanID)" }
        return line
    }
}
