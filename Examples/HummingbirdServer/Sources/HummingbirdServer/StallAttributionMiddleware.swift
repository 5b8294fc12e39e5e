import Hummingbird
import Stallwatch

/// Names the request in every stall report of code it runs (``StallAttribution``): method, route
/// pattern, and the trace and span ids of the request's `ServiceContext`. Copy this file into a
/// service; add it right after Hummingbird's `TracingMiddleware`, so the context it reads holds
/// the request's span:
///
/// ```swift
/// router.add(middleware: TracingMiddleware())
/// router.add(middleware: StallAttributionMiddleware())
/// ```
///
/// The route is read when a stall needs it: Hummingbird resolves `endpointPath` after the
/// middleware ran, into a box every copy of the context shares.
struct StallAttributionMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let endpoint = context.coreContext.endpointPath
        let path = request.uri.path
        return try await StallAttribution.serving(method: request.method.rawValue,
                                                  route: endpoint.value ?? "unmatched \(path)") {
            try await next(request, context)
        }
    }
}
