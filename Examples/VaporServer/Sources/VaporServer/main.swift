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
    onEvent: { event in FileHandle.standardOutput.write(Data((event.jsonLine + "\n").utf8)) })
watchdog.monitor(eventLoopGroup: app.eventLoopGroup) // Vapor's event loops: sync and future routes
watchdog.monitor(PingProbe.cooperativePool())        // the whole pool starved
// async routes run as Tasks on the pool: each blocking job is watched by default (watchPoolJobs)
try watchdog.start()
defer { watchdog.stop() }                            // after the app: flushes the final reports
try await serve(app)                                 // app.execute(), printing the bound port
