import Hummingbird
import Stallwatch

/// The service's own routes: here, handlers that block their pool thread on purpose, so the
/// end-to-end tests can check what Stallwatch reports for each.
func addRoutes(to router: Router<BasicRequestContext>) {
    router.get("/") { _, _ in "ok\n" }
    // The sampler's own counters, for `bench server` (captures by signal since start).
    router.get("/stallwatch/stats") { _, _ in
        let s = SamplerStatistics.current
        return "{\"handled\":\(s.handled),\"late\":\(s.late),\"chained\":\(s.chained),\"timeouts\":\(s.timeouts)}\n"
    }
    // A request that stays in flight without holding a thread (the attribution test's bystanders).
    router.get("/wait") { request, _ -> String in
        let milliseconds = request.uri.queryParameters.get("ms", as: Int.self) ?? 500
        try await Task.sleep(for: .milliseconds(milliseconds))
        return "waited \(milliseconds) ms\n"
    }
    router.get("/block/:kind") { request, context -> String in
        let kind = context.parameters.get("kind") ?? ""
        let milliseconds = request.uri.queryParameters.get("ms", as: Int.self) ?? 1500
        switch kind {
        case "sleep": sleepingHandler(milliseconds: milliseconds)
        case "cpu": computingHandler(milliseconds: milliseconds)
        case "lock": lockingHandler(milliseconds: milliseconds)
        case "socket": socketReadingHandler(milliseconds: milliseconds)
        default: throw HTTPError(.notFound)
        }
        return "blocked \(kind) \(milliseconds) ms\n"
    }
    // The fault-injection matrix's labelled stalls, as pool jobs; the answer says when and where.
    // `pooldeadlock` blocks every pool worker at once (BlockingWork `runPoolDeadlockInjection`).
    router.get("/inject/:kind") { request, context -> String in
        let milliseconds = request.uri.queryParameters.get("ms", as: Int.self) ?? 1500
        let kind = context.parameters.get("kind") ?? ""
        if let answer = await asyncInjectingHandler(kind: kind, milliseconds: milliseconds) { return answer }
        guard let answer = injectingHandler(kind: kind, milliseconds: milliseconds) else {
            throw HTTPError(.notFound)
        }
        return answer
    }
    // The same stalls on one of the server's event loops, outside any request's task (so no request).
    router.get("/inject-loop/:kind") { request, context -> String in
        let milliseconds = request.uri.queryParameters.get("ms", as: Int.self) ?? 1500
        let kind = context.parameters.get("kind") ?? ""
        let answer = try await group.any().submit { injectingHandler(kind: kind, milliseconds: milliseconds) }.get()
        guard let answer else { throw HTTPError(.notFound) }
        return answer
    }
}
