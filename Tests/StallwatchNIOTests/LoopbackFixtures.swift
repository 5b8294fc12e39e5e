import Glibc
import NIOCore
import NIOPosix
import Stallwatch
import StallwatchNIO
import Synchronization
import Testing

/// CLOCK_MONOTONIC now, in nanoseconds: the clock the tests time stalls and their events on.
func monotonicNanosecondsNow() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

/// When a watchdog's stall events came (monotonic nanoseconds).
final class StallEventTimes: Sendable {
    private let times = Mutex<[Int64]>([])
    func record() {
        let at = monotonicNanosecondsNow()
        times.withLock { $0.append(at) }
    }
    var all: [Int64] { times.withLock { $0 } }
}

/// A started watchdog over a group that reports its ticks, and when each of its stall events came.
/// Stop it.
func stallTimingWatchdog(group: MultiThreadedEventLoopGroup, ticks: EventLoopTickTimer,
                         threshold: Duration) throws -> (watchdog: Watchdog, detected: StallEventTimes) {
    let detected = StallEventTimes()
    let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: threshold, watchPoolJobs: false),
                                metrics: nil) { event in
        if event.kind == .stall { detected.record() }
    }
    watchdog.monitor(eventLoopGroup: group, ticks: ticks)
    try watchdog.start()
    return (watchdog, detected)
}

/// A TCP server on 127.0.0.1 in `group` whose connections run `handler`, and a client connected to
/// it from a group of its own. ``close()`` it.
struct LoopbackConnection {
    let server: any Channel
    let client: any Channel
    private let clientGroup: MultiThreadedEventLoopGroup

    init(group: MultiThreadedEventLoopGroup, handler: some ChannelInboundHandler & Sendable) throws {
        server = try ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        client = try ClientBootstrap(group: clientGroup).connect(to: try #require(server.localAddress)).wait()
    }

    func close() {
        try? client.close().wait()
        try? server.close().wait()
        try? clientGroup.syncShutdownGracefully()
    }
}
