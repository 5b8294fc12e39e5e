import CSampler
import StallwatchPolicy
import StallwatchReport
import Synchronization
import Tracing

/// Names the request a stall blocked: a middleware (or a handler) wraps the request in
/// ``serving(method:route:context:isolation:_:)``, and every stall report of code run inside it
/// carries `ReportRequest` (method, route pattern, the trace and span ids of its
/// `ServiceContext`), and the stall reaches the request's trace as a `stallwatch.stall` span.
///
/// How the stalled request is found: the request gets a tag (an integer) in a task-local, which
/// child tasks and unstructured `Task {}`s inherit. When the watchdog samples a stalled thread, the
/// signal handler reads the tag of the task (or, outside any task, of the thread) it interrupted,
/// and the watchdog maps the tag back to the request through a registry that holds it while it is
/// in flight and for a short while after. A thread blocked in a system call is not signalled: the
/// watchdog reads the tag of the task it runs from outside instead, through offsets learned in the
/// first requests (a synchronous handler outside any task, blocked there, names no request). Only
/// the stalled thread's own request is read, so requests in flight elsewhere are never charged.
///
/// Cost per request: one atomic increment, one short lock to register and one to unregister, and
/// the task-local push. Nothing about tracing is read until a stall needs it.
public struct StallAttribution: Sendable {
    @TaskLocal static var tag: UInt64 = 0

    private init() {}

    /// Runs `operation` as the serving of one request: a stall of any code it runs (its child tasks
    /// and the tasks it starts included) names the request.
    ///
    /// - Parameters:
    ///   - method: The HTTP method (or another verb), e.g. `GET`.
    ///   - route: The route *pattern* (`/users/:id`), not the concrete path: reports and labels
    ///     stay bounded, and no user data lands in them. Evaluated only when a stall names the
    ///     request, on the watchdog's thread: a router that resolves the route after the middleware
    ///   ran (Hummingbird's `context.endpointPath`) can be read then.
    ///   - context: The request's `ServiceContext`; `ServiceContext.current` when `nil` (put this
    ///     call inside the tracing middleware, so the context holds the request's span).
    ///   - isolation: The caller's actor isolation, kept for `operation` (the default, the caller's).
    ///   - operation: The request's work.
    public static func serving<Result>(
        method: String, route: @autoclosure @escaping @Sendable () -> String, context: ServiceContext? = nil,
        isolation: isolated (any Actor)? = #isolation,
        _ operation: () async throws -> Result
    ) async rethrows -> Result {
        let tag = begin(method: method, route: route, context: context)
        defer { registry.finish(tag) }
        BlockedRequestTags.observeIfLearning()
        return try await $tag.withValue(tag, operation: operation, isolation: isolation)
    }

    /// The same for synchronous work, e.g. a handler run on a NIO event loop (outside any task the
    /// tag is kept for the thread, and read there just the same).
    public static func serving<Result>(
        method: String, route: @autoclosure @escaping @Sendable () -> String, context: ServiceContext? = nil,
        _ operation: () throws -> Result
    ) rethrows -> Result {
        let tag = begin(method: method, route: route, context: context)
        defer { registry.finish(tag) }
        BlockedRequestTags.observeIfLearning()
        return try $tag.withValue(tag, operation: operation)
    }

    /// The same, for a caller that holds the request's own span (a middleware that starts it): its
    /// context names the request, and a stall of the request is also put on that span while it is
    /// open — a `stallwatch.stall` event with the stall's attributes and `stallwatch.stalled` — as
    /// no tracer hands a context's span out. The `stallwatch.stall` child span is made as well.
    public static func serving<Result>(
        method: String, route: @autoclosure @escaping @Sendable () -> String, span: any Span,
        isolation: isolated (any Actor)? = #isolation,
        _ operation: () async throws -> Result
    ) async rethrows -> Result {
        let tag = begin(method: method, route: route, context: span.context, span: span)
        defer { registry.finish(tag) }
        BlockedRequestTags.observeIfLearning()
        return try await $tag.withValue(tag, operation: operation, isolation: isolation)
    }

    /// The same for synchronous work, with the request's own span.
    public static func serving<Result>(
        method: String, route: @autoclosure @escaping @Sendable () -> String, span: any Span,
        _ operation: () throws -> Result
    ) rethrows -> Result {
        let tag = begin(method: method, route: route, context: span.context, span: span)
        defer { registry.finish(tag) }
        BlockedRequestTags.observeIfLearning()
        return try $tag.withValue(tag, operation: operation)
    }

    private static func begin(method: String, route: @escaping @Sendable () -> String, context: ServiceContext?,
                              span: (any Span)? = nil) -> UInt64 {
        installKey()
        return registry.register(RequestEntry(method: method, route: route, context: context ?? ServiceContext.current,
                                              span: span))
    }

    /// Hands the task-local's key to the signal handler (once; the watchdog does it at start too,
    /// so that a request begun before it is read as well).
    static func installKey() { _ = keyInstalled }

    private static let keyInstalled: Bool = {
        sw_request_key_set(UnsafeRawPointer(Unmanaged.passUnretained($tag).toOpaque()))
        return true
    }()

    static let registry = RequestRegistry()
    static let spans = StallSpans()

    /// A stall report was made, rewritten or made final: its span on the request's trace.
    static func reported(_ report: StallReport, samples: some Collection<CapturedStack>) {
        guard report.request != nil else { return }
        let entry = dominantTag(of: samples).flatMap { registry.lookup($0.tag) }
        spans.reported(report, entry: entry)
    }

    /// The context of the request `report` names (the one most of `samples` were taken in), for the
    /// stall's log records; `nil` when it names none or the request is forgotten.
    static func context(of report: StallReport, samples: some Collection<CapturedStack>) -> ServiceContext? {
        guard report.request != nil, let (tag, _) = dominantTag(of: samples) else { return nil }
        return registry.lookup(tag)?.context
    }

    // MARK: - the watchdog's side

    /// The request most of `samples` were taken in, with how many; `nil` when none was tagged.
    /// Samples of other requests (a pool thread that moved on) do not count for it.
    static func dominantTag(of samples: some Collection<CapturedStack>) -> (tag: UInt64, count: Int)? {
        var counts: [UInt64: Int] = [:]
        for s in samples { if let t = s.requestTag { counts[t, default: 0] += 1 } }
        return counts.max { $0.value < $1.value || ($0.value == $1.value && $0.key < $1.key) }
            .map { (tag: $0.key, count: $0.value) }
    }

    /// The report's request from its samples: the registry's facts for the dominant tag, with the
    /// trace and span ids of its context. `nil` when no sample was tagged or the tag is no longer
    /// known (a request finished long ago).
    static func request(for samples: some Collection<CapturedStack>) -> (request: ReportRequest, entry: RequestEntry)? {
        guard let (tag, count) = dominantTag(of: samples), let entry = registry.lookup(tag) else { return nil }
        let ids = entry.context.map(TraceIDs.init(context:)) ?? TraceIDs()
        return (ReportRequest(method: entry.method, route: entry.route(), traceID: ids.traceID, spanID: ids.spanID,
                              sampleCount: count), entry)
    }
}

/// What the registry keeps of one request.
struct RequestEntry: Sendable {
    var method: String
    var route: @Sendable () -> String
    var context: ServiceContext?
    /// The request's own span, when the caller handed it over.
    var span: (any Span)? = nil
}

/// Requests by tag: those in flight, and the last ``recentCapacity`` finished (a stall's final
/// report is made after it ended, and its request may be done by then). Tags are never reused, so
/// a tag read late names its own request or none.
final class RequestRegistry: Sendable {
    static let recentCapacity = 256

    private struct State {
        var inFlight: [UInt64: RequestEntry] = [:]
        var recent: [(tag: UInt64, entry: RequestEntry)] = []
        var recentNext = 0
    }

    private let state = Mutex(State())
    private let nextTag = Atomic<UInt64>(1)

    /// Registers a request in flight; returns its tag (never 0).
    func register(_ entry: RequestEntry) -> UInt64 {
        let tag = nextTag.wrappingAdd(1, ordering: .relaxed).oldValue
        state.withLock { $0.inFlight[tag] = entry }
        return tag
    }

    /// The request is done: kept among the recent ones.
    func finish(_ tag: UInt64) {
        state.withLock { s in
            guard let entry = s.inFlight.removeValue(forKey: tag) else { return }
            if s.recent.count < Self.recentCapacity {
                s.recent.append((tag, entry))
            } else {
                s.recent[s.recentNext] = (tag, entry)
            }
            s.recentNext = (s.recentNext + 1) % Self.recentCapacity
        }
    }

    /// The request `tag` names, in flight or recently finished.
    func lookup(_ tag: UInt64) -> RequestEntry? {
        state.withLock { s in
            s.inFlight[tag] ?? s.recent.last { $0.tag == tag }?.entry
        }
    }

    /// Requests in flight now.
    var inFlightCount: Int { state.withLock { $0.inFlight.count } }
}

/// The trace and span ids of a `ServiceContext`, as the bootstrapped instrument propagates them:
/// the context is injected into a dictionary and the ids read back from W3C `traceparent`
/// (swift-otel and most tracers) or from keys naming a trace or span id (e.g. the in-memory
/// tracer's `in-memory-trace-id`, B3's `X-B3-TraceId`). No tracer, no ids.
struct TraceIDs: Equatable {
    var traceID: String?
    var spanID: String?

    init(traceID: String? = nil, spanID: String? = nil) {
        self.traceID = traceID
        self.spanID = spanID
    }

    init(context: ServiceContext) {
        var carrier: [String: String] = [:]
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: DictionaryInjector())
        self.init(headers: carrier)
    }

    init(headers: [String: String]) {
        self.init()
        for (key, value) in headers {
            let k = key.lowercased()
            if k == "traceparent" {
                // version-traceid-parentid-flags
                let parts = value.split(separator: "-")
                if parts.count >= 4, parts[1].count == 32, parts[2].count == 16 {
                    traceID = String(parts[1])
                    spanID = String(parts[2])
                    return
                }
            } else if k.hasSuffix("trace-id") || k.hasSuffix("traceid") {
                traceID = traceID ?? value
            } else if k.hasSuffix("span-id") || k.hasSuffix("spanid") {
                spanID = spanID ?? value
            }
        }
    }
}

private struct DictionaryInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
        carrier[key] = value
    }
}
