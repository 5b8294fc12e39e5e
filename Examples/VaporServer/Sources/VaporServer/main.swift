import Foundation
import Logging
import Stallwatch
import StallwatchNIO
import Vapor

// Configuration from the environment, so the same binary serves a demo and the end-to-end tests.
let environment = ProcessInfo.processInfo.environment
let port = Int(environment["PORT"] ?? "") ?? 8080
let thresholdMilliseconds = Int(environment["STALLWATCH_THRESHOLD_MS"] ?? "") ?? 500

// Vapor takes its command and flags from the arguments; fixed ones here, so the environment above is
// the whole contract. Production logs at notice: no line per request (LOG_LEVEL still overrides).
var vaporEnvironment = Environment(name: "production", arguments: ["vapor", "serve"])
try LoggingSystem.bootstrap(from: &vaporEnvironment)
let app = try await Application.make(vaporEnvironment)
app.http.server.configuration.hostname = "127.0.0.1"
app.http.server.configuration.port = port      // 0: any free port, read back once bound
addRoutes(to: app)
app.middleware.use(TracingMiddleware())            // a span (ServiceContext) per request
app.middleware.use(StallAttributionMiddleware())   // stall reports name the request and its trace

let watchdog = try Watchdog(
    configuration: WatchdogConfiguration(threshold: .milliseconds(thresholdMilliseconds)),
    reportDirectory: environment["STALLWATCH_REPORT_DIR"],
    logger: Logger(label: "stallwatch"),
    onEvent: { event in print(event.jsonLine); fflush(nil) })
watchdog.monitor(eventLoopGroup: app.eventLoopGroup)  // Vapor's NIO event loops, pinged
watchdog.monitor(PingProbe.cooperativePool())        // the whole pool starved
// Single route-handler jobs that block their pool thread are watched by default (watchPoolJobs).
try watchdog.start()

// What app.execute() does, split so the real address is printed between its two steps.
do {
    try await app.startup()      // boots and runs `serve`: returns once the server listens
    print("listening on 127.0.0.1:\(app.http.server.shared.localAddress?.port ?? 0)")
    fflush(nil)
    try await app.running?.onStop.get()   // until SIGTERM/SIGINT, which Vapor's serve command handles
} catch {
    app.logger.report(error: error)
    try? await app.asyncShutdown()
    watchdog.stop()
    throw error
}
try await app.asyncShutdown()    // the server closes: requests still in flight stay watched
watchdog.stop()                  // then the watchdog stops and flushes its reports
