import Foundation
import Hummingbird
import Logging
import Metrics
import NIOCore
import NIOPosix
import Prometheus
import ServiceLifecycle
import Stallwatch
import StallwatchNIO

// Configuration from the environment, so the same binary serves a demo and the end-to-end tests.
let environment = ProcessInfo.processInfo.environment
let port = Int(environment["PORT"] ?? "") ?? 8080
let thresholdMilliseconds = Int(environment["STALLWATCH_THRESHOLD_MS"] ?? "") ?? 500
// OpenTelemetry's logs, traces and metrics when OTEL_EXPORTER_OTLP_ENDPOINT is set, before any
// Logger is made (OpenTelemetry.swift); a service without swift-otel compiles the `#else`.
#if canImport(OTel)
let openTelemetry = try OpenTelemetry.bootstrapIfAsked(environment)
#else
let openTelemetry: (any Service)? = nil
#endif
let logger = Logger(label: "hummingbird-server")

// The application picks the metrics backend; Stallwatch's metrics go wherever it points.
let registry = PrometheusCollectorRegistry()
if openTelemetry == nil { MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry)) }

let router = Router()
if openTelemetry == nil { ExampleTracer.bootstrapIfAsked(environment)?.addRoutes(to: router) }   // test aid
router.add(middleware: TracingMiddleware())            // a span (ServiceContext) per request
router.add(middleware: StallAttributionMiddleware())   // stall reports name the request and its trace
router.get("/metrics") { _, _ in registry.emitToString() }
addRoutes(to: router)                                  // the service's own handlers

// One group for the server; its loops tell the watchdog when each tick ends, so an idle loop is
// never woken to prove it is alive.
let ticks = EventLoopTickTimer()
let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount, metricsDelegate: ticks)

let processMetrics = try ProcessMetrics()        // CPU, memory, threads, fds, start-up: opt-in
let watchdog = try Watchdog(
    configuration: WatchdogConfiguration(threshold: .milliseconds(thresholdMilliseconds)),
    reportDirectory: environment["STALLWATCH_REPORT_DIR"],
    logger: Logger(label: "stallwatch"),
    metrics: try WatchdogMetrics(process: processMetrics),
    onEvent: { event in FileHandle.standardOutput.write(Data((event.jsonLine + "\n").utf8)) })
watchdog.monitor(eventLoopGroup: group, ticks: ticks) // every NIO event loop, by its ticks
watchdog.monitor(PingProbe.cooperativePool())       // the whole pool starved
// Single route-handler jobs that block their pool thread are watched by default (watchPoolJobs).
// A profile per stall over OTLP/HTTP when OTEL_EXPORTER_OTLP_(PROFILES_)ENDPOINT is set (the
// package's OTLPProfiles trait); a malformed OTEL_EXPORTER_OTLP_* value is an error naming it.
let profileExporter: OTLPProfileExporter?
do {
    profileExporter = try OTLPProfileExporter.Configuration.fromEnvironment(environment)
        .map { try OTLPProfileExporter(configuration: $0, watchdog: watchdog) }
} catch {
    FileHandle.standardError.write(Data("hummingbird-server: \(error)\n".utf8))
    exit(2)
}

let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: port)),
    onServerRunning: { channel in
        processMetrics.ready()                        // start-up time: process start until now
        print("listening on 127.0.0.1:\(channel.localAddress?.port ?? 0)")
        fflush(nil)
    },
    eventLoopGroupProvider: .shared(group),
    logger: logger)

// A loop of the service's own, watched by heartbeats; it runs in a task beside the services.
let (jobs, submit) = AsyncStream.makeStream(of: (@Sendable () -> Void).self)
let ingest = Task { await runIngestLoop(jobs, watchdog: watchdog) }
let stallEvents = Task { await followStallEvents(of: watchdog) }   // StallEvents.swift

let services = ServiceGroup(configuration: .init(
    // Stopped in reverse order: swift-otel last, so it sends the watchdog's last lines; the
    // profile exporter after the watchdog, so it sends the stalls the watchdog closes as it stops.
    services: (openTelemetry.map { [$0] } ?? []) + (profileExporter.map { [$0] } ?? []) + [app, watchdog],
    gracefulShutdownSignals: [.sigterm, .sigint],
    logger: logger))
try await services.run()   // until SIGTERM/SIGINT: then the watchdog stops and flushes its reports
submit.finish()
await ingest.value
stallEvents.cancel()
try await group.shutdownGracefully()
