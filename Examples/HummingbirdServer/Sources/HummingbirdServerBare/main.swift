import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore
import NIOPosix
import Prometheus
import ServiceLifecycle

// The "off" side of `bench server`'s A/B rounds: the service of main.swift as it would be without
// Stallwatch. The same routes, the same tracing middleware, the same metrics backend and the same
// kind of event-loop group; no watchdog, no signal handler, no pool hook, no tick delegate, no
// request attribution. So the A/B difference is Stallwatch's alone (the library is linked only for
// the stats route, which reads zeros here).
let environment = ProcessInfo.processInfo.environment
let port = Int(environment["PORT"] ?? "") ?? 8080
let logger = Logger(label: "hummingbird-server-bare")
let registry = PrometheusCollectorRegistry()
MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
let router = Router()
router.add(middleware: TracingMiddleware())
router.get("/metrics") { _, _ in registry.emitToString() }
addRoutes(to: router)
let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port)),
    onServerRunning: { channel in
        print("listening on 127.0.0.1:\(channel.localAddress?.port ?? 0) (watchdog off)")
        fflush(nil)
    },
    eventLoopGroupProvider: .shared(group),
    logger: logger)
let services = ServiceGroup(configuration: .init(
    services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
try await services.run()
try await group.shutdownGracefully()
