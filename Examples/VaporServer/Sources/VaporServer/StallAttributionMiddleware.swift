import Stallwatch
import Vapor

/// Names the request in every stall report of code it runs (``StallAttribution``): method, route
/// pattern, and the trace and span ids of the request's `ServiceContext`. Copy this file into a
/// service; use it right after Vapor's `TracingMiddleware`, so `request.serviceContext` holds the
/// request's span:
///
/// ```swift
/// app.middleware.use(TracingMiddleware())
/// app.middleware.use(StallAttributionMiddleware())
/// ```
///
/// Async routes run in a task this middleware's task-local reaches (Vapor starts it from here).
/// A synchronous or `EventLoopFuture` route runs on an event loop, outside it: wrap such a
/// handler's work in the synchronous `StallAttribution.serving` to name it.
struct StallAttributionMiddleware: AsyncMiddleware {
    func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        let route = request.route   // the matched route; its pattern is spelled only if a stall needs it
        return try await StallAttribution.serving(
            method: request.method.rawValue,
            route: route.map { "/" + $0.path.map { "\($0)" }.joined(separator: "/") } ?? "unmatched",
            context: request.serviceContext
        ) {
            try await next.respond(to: request)
        }
    }
}
