import Vapor

/// The service's own routes: here, handlers that block their pool thread on purpose, so the
/// end-to-end tests can check what Stallwatch reports for each. The closures are `async` so Vapor
/// runs them as tasks on the Swift concurrency pool (watched job by job), not on its event loops.
func addRoutes(to app: Application) {
    app.get { _ async -> String in "ok\n" }
    // Test aid: the in-memory tracer and GET /debug/spans, only with STALLWATCH_EXAMPLE_TRACER=memory.
    ExampleTracer.bootstrapIfAsked()?.addRoutes(to: app)
    // A request that stays in flight without holding a thread (the attribution test's bystanders).
    app.get("wait") { request async throws -> String in
        let milliseconds = request.query[Int.self, at: "ms"] ?? 500
        try await Task.sleep(for: .milliseconds(milliseconds))
        return "waited \(milliseconds) ms\n"
    }
    app.get("block", ":kind") { request async throws -> String in
        let kind = request.parameters.get("kind") ?? ""
        let milliseconds = request.query[Int.self, at: "ms"] ?? 1500
        switch kind {
        case "sleep": sleepingHandler(milliseconds: milliseconds)
        case "cpu": computingHandler(milliseconds: milliseconds)
        case "lock": lockingHandler(milliseconds: milliseconds)
        case "socket": socketReadingHandler(milliseconds: milliseconds)
        default: throw Abort(.notFound)
        }
        return "blocked \(kind) \(milliseconds) ms\n"
    }
    // The fault-injection matrix's labelled stalls, as pool jobs (async) and, from a synchronous
    // closure, on Vapor's event loop itself; the answer says when and where. `pooldeadlock` (async
    // only) blocks every pool worker at once (BlockingWork `runPoolDeadlockInjection`).
    app.get("inject", ":kind") { request async throws -> String in
        let milliseconds = request.query[Int.self, at: "ms"] ?? 1500
        let kind = request.parameters.get("kind") ?? ""
        if let answer = await asyncInjectingHandler(kind: kind, milliseconds: milliseconds) { return answer }
        guard let answer = injectingHandler(kind: kind, milliseconds: milliseconds) else {
            throw Abort(.notFound)
        }
        return answer
    }
    app.get("inject-loop", ":kind") { request throws -> String in
        let milliseconds = request.query[Int.self, at: "ms"] ?? 1500
        guard let answer = injectingHandler(kind: request.parameters.get("kind") ?? "", milliseconds: milliseconds) else {
            throw Abort(.notFound)
        }
        return answer
    }
}
