import Hummingbird
import NIOPosix
import ServiceLifecycle
import Stallwatch
import StallwatchNIO

/// The least a Hummingbird 2 service adds to its own `main` (the README's "Smallest wiring"): the
/// lines marked `+`. Pool jobs that block their thread are watched by default; the application's
/// event loops are Hummingbird's default group, `MultiThreadedEventLoopGroup.singleton`. The
/// example's `main.swift` is the full wiring (metrics, tracing, request attribution).
func serveWithSmallestWiring(router: Router<BasicRequestContext>) async throws {
    let watchdog = try Watchdog(reportDirectory: "/var/tmp/myservice-stalls")   // +
    watchdog.monitor(eventLoopGroup: MultiThreadedEventLoopGroup.singleton)      // + Hummingbird's loops
    watchdog.monitor(PingProbe.cooperativePool())                                // + the whole pool starved
    let app = Application(router: router)
    try await ServiceGroup(services: [app, watchdog],                          // + the watchdog as a service
                           gracefulShutdownSignals: [.sigterm], logger: app.logger).run()
}
