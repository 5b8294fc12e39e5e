import Foundation
import Glibc
import NIOCore
import NIOPosix
import Stallwatch
import StallwatchNIO
import Synchronization
import Testing

/// The watchdog thread's wake-ups so far (its schedstat timeslices).
private func watchdogWakeups() throws -> Int {
    let task = "/proc/self/task"
    let tids = try FileManager.default.contentsOfDirectory(atPath: task)
    let tid = try #require(tids.first { (try? String(contentsOfFile: "\(task)/\($0)/comm", encoding: .utf8)) == "stallwatch\n" })
    let fields = try String(contentsOfFile: "\(task)/\(tid)/schedstat", encoding: .utf8).split(separator: " ")
    return try #require(Int(fields[2].trimmingCharacters(in: .whitespacesAndNewlines)))
}

private func openDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// Blocks the loop in `channelRead` for 500 ms (between ticks: only looks date its start).
private final class SlowReadHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    let starts = Mutex<[Int64]>([])
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        starts.withLock { $0.append(monotonicNanosecondsNow()) }
        usleep(500_000)
    }
}

@Suite("Event loops asleep in epoll_wait rest", .serialized)
struct LoopRestTests {
    @Test("an idle group watched by its ticks: the watchdog wakes a few times in 2 s, not every 40 ms, and the loops never")
    func idleGroupRests() throws {
        let counter = TickCounter()
        let ticks = EventLoopTickTimer(forwardingTo: counter)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2, metricsDelegate: ticks)
        defer { try? group.syncShutdownGracefully() }
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(watchPoolJobs: false), metrics: nil)
        watchdog.monitor(eventLoopGroup: group, ticks: ticks)
        try watchdog.start()
        defer { watchdog.stop() }
        usleep(500_000)
        let wakes0 = try watchdogWakeups()
        let ticks0 = counter.count.load(ordering: .relaxed)
        usleep(2_000_000)
        let wakes = try watchdogWakeups() - wakes0
        // Looked at every 40 ms, that was 50; resting, the late look every 1.8 s (threshold 2 s).
        #expect(wakes <= 6, "\(wakes) watchdog wake-ups in 2 s")
        #expect(counter.count.load(ordering: .relaxed) == ticks0, "the idle loops ticked")
    }

    @Test("work given to a resting loop (execute, its own timer, a socket read) wakes the watchdog: each stall is reported once, at start + threshold")
    func restingLoopsWakeTheWatchdog() throws {
        let ticks = EventLoopTickTimer()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1, metricsDelegate: ticks)
        defer { try? group.syncShutdownGracefully() }
        let threshold = Duration.milliseconds(300)
        let (watchdog, detected) = try stallTimingWatchdog(group: group, ticks: ticks, threshold: threshold)
        defer { watchdog.stop() }
        let handler = SlowReadHandler()
        let connection = try LoopbackConnection(group: group, handler: handler)
        defer { connection.close() }

        let loop = group.next()
        // One stall first, not measured: the first report loads the symbol tables, which in a slow
        // build (sanitizers) delays its event by far more than the tolerance below.
        loop.execute { usleep(400_000) }
        usleep(700_000)
        let warmUpStalls = detected.all.count
        let starts = Mutex<[Int64]>([])
        // A task the loop's own timer runs 1.5 s from now: the loop sleeps until its timerfd fires.
        loop.execute {
            loop.scheduleTask(in: .milliseconds(1_500)) {
                starts.withLock { $0.append(monotonicNanosecondsNow()) }
                usleep(600_000)
            }
        }
        var idleWakes: [Int] = []
        func idleWakesBeforeWork() throws {
            usleep(500_000)
            let before = try watchdogWakeups()
            usleep(500_000)
            idleWakes.append(try watchdogWakeups() - before)
        }
        try idleWakesBeforeWork()
        usleep(1_200_000)   // the timer's stall: 1.5 s to 2.1 s
        try idleWakesBeforeWork()
        loop.execute {
            starts.withLock { $0.append(monotonicNanosecondsNow()) }
            usleep(600_000)
        }
        usleep(700_000)
        try idleWakesBeforeWork()
        try connection.client.writeAndFlush(ByteBuffer(string: "x")).wait()
        usleep(700_000)
        let found = Array(detected.all.dropFirst(warmUpStalls))
        let began = starts.withLock { $0 } + handler.starts.withLock { $0 }
        // Asleep before each: at most the late look (every 270 ms) in the half second measured.
        for wakes in idleWakes { #expect(wakes <= 3, "\(wakes) watchdog wake-ups in 0.5 s before work: it did not rest") }
        #expect(found.count == 3, "\(found.count) stall events for 3 stalls")
        #expect(began.count == 3)
        for (at, start) in zip(found.sorted(), began.sorted()) {
            // Woken by the loop's own event: seen at once, dated from it. Without that wake only the
            // late look (every 270 ms) would see it, up to 270 ms after start + threshold.
            // Under the sanitizers (CI's second run) every round is several times slower: there
            // the wake path is run for memory errors, and its timing is checked by the plain run.
            let bound: Int64 = ProcessInfo.processInfo.environment["ASAN_OPTIONS"] == nil ? 80_000_000 : 250_000_000
            let late = at - start - threshold.clampedNanoseconds
            #expect(late >= -25_000_000 && late <= bound, "reported \(late / 1_000_000) ms after start + threshold")
        }
    }

    @Test("a stopped watchdog leaves no descriptor of its loop-rest set open")
    func noDescriptorLeft() throws {
        let ticks = EventLoopTickTimer()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1, metricsDelegate: ticks)
        defer { try? group.syncShutdownGracefully() }
        func restOnce() throws {
            let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(300), watchPoolJobs: false),
                                        metrics: nil)
            watchdog.monitor(eventLoopGroup: group, ticks: ticks)
            try watchdog.start()
            usleep(600_000)
            let wakes0 = try watchdogWakeups()
            usleep(400_000)
            // Resting: the late look only (every 270 ms), not 10 looks.
            #expect(try watchdogWakeups() - wakes0 <= 3)
            watchdog.stop()
        }
        // The first one makes the process's one wake-up event, kept for good.
        try restOnce()
        let before = openDescriptors()
        try restOnce()
        #expect(openDescriptors() == before, "descriptors before \(before), after \(openDescriptors())")
    }
}
