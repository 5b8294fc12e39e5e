import Foundation
import Glibc
import NIOCore
import NIOPosix
import Stallwatch
import StallwatchNIO
import StallwatchPolicy
import StallwatchReport
import Synchronization
import Testing

// A raw SwiftNIO handler that blocks its event loop in libc's usleep (built without frame
// pointers): the report must name the handler's own function above libc's sleep, not stop at
// `clock_nanosleep <- __nanosleep <- usleep`.

/// How long channelRead sleeps.
let nioSleepMilliseconds = 1300

@inline(never)
func nioFixtureSleepInChannelRead(milliseconds: Int) -> Int {
    usleep(UInt32(milliseconds) * 1000)
    return milliseconds &+ 1 // work after the call: a real frame, not a tail call
}

/// Counts the reads it slept through.
final class SleepingHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    let reads = Atomic<Int>(0)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        _ = nioFixtureSleepInChannelRead(milliseconds: nioSleepMilliseconds)
        reads.add(1, ordering: .relaxed)
    }
}

func nioModuleFile(_ module: String?) -> String {
    guard let module else { return "" }
    return module.split(separator: "/").last.map(String.init) ?? module
}

func nioDescribe(_ stack: [ReportFrame]) -> String {
    stack.map { "\($0.symbol ?? "?") [\(nioModuleFile($0.module))\($0.symbol == nil ? $0.moduleOffset.map { "+\($0)" } ?? "" : "")]" }
        .joined(separator: " <- ")
}

@Suite("Stalls inside libraries without frame pointers, on a NIO event loop", .serialized)
struct ForeignLibraryNIOTests {
    @Test("usleep inside channelRead: one report, cause sleeping, usleep <- the handler's function, every frame chained")
    func usleepInChannelRead() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let reports = Reports()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(500), watchPoolJobs: false)) {
            reports.append($0)
        }
        watchdog.monitor(eventLoopGroup: group)
        try watchdog.start()
        defer { watchdog.stop() }
        let handler = SleepingHandler()
        let receiver = try DatagramBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
            }
            .bind(host: "127.0.0.1", port: 0).wait()
        defer { try? receiver.close().wait() }
        let sender = try DatagramBootstrap(group: group).bind(host: "127.0.0.1", port: 0).wait()
        defer { try? sender.close().wait() }
        usleep(300_000) // a few healthy pings first
        let address = try #require(receiver.localAddress)
        try sender.writeAndFlush(AddressedEnvelope(remoteAddress: address, data: sender.allocator.buffer(string: "x"))).wait()
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while handler.reads.load(ordering: .relaxed) == 0 && clock.now < deadline { usleep(10_000) }
        usleep(600_000) // the pings answer again: the stall ends
        // What is checked is the report, not how soon it came: in an ASan pass of a fresh-clone CI
        // run it came after the 600 ms (both its events were logged as the test failed). Waited
        // for, then, up to 10 s.
        let reported = clock.now + .seconds(10)
        while (reports.stalls.isEmpty || reports.endedCount == 0) && clock.now < reported { usleep(10_000) }

        #expect(handler.reads.load(ordering: .relaxed) == 1)
        let stalls = reports.stalls
        #expect(stalls.count == 1, "\(stalls.map { nioDescribe(Array($0.blamedStack.prefix(10))) })")
        let report = try #require(stalls.first)
        let stack = report.blamedStack
        let text = "\(nioDescribe(stack)); cause \(report.cause?.kind.rawValue ?? "-"): \(report.cause?.evidence ?? ""); "
            + "truncated \(report.truncatedSampleCount) of \(report.sampleCount) \(report.stackEnds ?? [:])"
        if getenv("STALLWATCH_TEST_STACKS") != nil {
            FileHandle.standardError.write(Data("STACK nio-usleep [\(report.loopName ?? "")] \(text)\n".utf8))
        }
        #expect(report.cause?.kind == .sleeping, "\(text)")
        #expect(report.loopName?.hasPrefix("nio-loop") == true, "\(text)")
        let handlerIndex = stack.firstIndex { $0.symbol?.contains("nioFixtureSleepInChannelRead") == true }
        let sleepIndex = stack.firstIndex { $0.symbol == "usleep" }
        #expect(stack.contains { nioModuleFile($0.module).hasPrefix("libc.so") }, "no libc frame: \(text)")
        guard let handlerIndex, let sleepIndex else {
            Issue.record("usleep or the handler's function is not named: \(text)")
            return
        }
        // usleep is called by the handler's function; below it only libc (its nanosleep wrappers).
        #expect(handlerIndex == sleepIndex + 1, "\(text)")
        #expect(stack[..<sleepIndex].allSatisfy { nioModuleFile($0.module).hasPrefix("libc.so") },
                "frames below usleep that do not chain: \(text)")
        // Above it, the handler is called from NIO's pipeline, on the way to the thread's first frame.
        #expect(stack[(handlerIndex + 1)...].contains { $0.symbol?.contains("channelRead") == true }, "\(text)")
        #expect(stack.contains { $0.symbol == "start_thread" || $0.symbol?.hasPrefix("asan_thread_start") == true },
                "not walked to the thread's first frame: \(text)")
    }
}
