import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

// The same routes on the same kind of event-loop group, with no watchdog at all: the "off" side of
// `bench server`'s A/B rounds. Stallwatch's signal handler, watchdog thread and pool scans are
// never created (the library is linked only for the stats route, which reads zeros here).
let environment = ProcessInfo.processInfo.environment
let port = Int(environment["PORT"] ?? "") ?? 8080
let logger = Logger(label: "hummingbird-server-bare")
let router = Router()
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
