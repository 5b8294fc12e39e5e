import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// Serves the same routes on the same kind of event-loop group, with no Stallwatch at all: the
/// "off" side of `bench server`'s A/B rounds (`STALLWATCH_OFF=1`). Nothing of Stallwatch is created,
/// so its signal handler, watchdog thread and pool scans are all absent.
func serveWithoutWatchdog(router: Router<BasicRequestContext>, port: Int, logger: Logger) async throws {
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
}
