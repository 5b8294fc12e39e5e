import Dispatch
import Foundation
import Logging
import NIOCore
import NIOPosix
import Stallwatch
import StallwatchNIO

let environment = ProcessInfo.processInfo.environment
let port = Int(environment["PORT"] ?? "") ?? 8080
let thresholdMilliseconds = Int(environment["STALLWATCH_THRESHOLD_MS"] ?? "") ?? 500

let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
let watchdog = try Watchdog(
    configuration: WatchdogConfiguration(threshold: .milliseconds(thresholdMilliseconds)),
    reportDirectory: environment["STALLWATCH_REPORT_DIR"],
    logger: Logger(label: "stallwatch"),
    onEvent: { event in FileHandle.standardOutput.write(Data((event.jsonLine + "\n").utf8)) })
watchdog.monitor(eventLoopGroup: group)
try watchdog.start()

let channel = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 256)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
            try channel.pipeline.syncOperations.addHandler(BlockingHTTPHandler())
        }
    }
    .bind(host: "127.0.0.1", port: port)
    .wait()
print("listening on 127.0.0.1:\(channel.localAddress?.port ?? 0)")
fflush(nil)

// SIGTERM / SIGINT: stop accepting, close, stop the watchdog (its reports are flushed), exit 0.
let signalSources = closeOnTermination(channel)
try channel.closeFuture.wait()
watchdog.stop()
try group.syncShutdownGracefully()
