import Glibc
import NIOCore
import NIOPosix
import Stallwatch
import StallwatchNIO
import StallwatchPolicy
import StallwatchReport
import Synchronization
import Testing

/// Collects the busy-loop and stall reports of one watchdog.
final class Reports: Sendable {
    private let events = Mutex<[WatchdogEvent]>([])
    func append(_ e: WatchdogEvent) { events.withLock { $0.append(e) } }
    var busyLoops: [StallReport] { events.withLock { $0.compactMap { $0.kind == .busyLoop ? $0.report : nil } } }
    var stalls: [StallReport] { events.withLock { $0.compactMap { $0.kind == .stall ? $0.report : nil } } }
    var endedCount: Int { events.withLock { $0.filter { $0.kind == .stallEnded }.count } }
}

/// Tells the loop's self-rescheduling work to stop.
final class StopFlag: Sendable {
    let value = Atomic<Bool>(false)
}

@Suite("Busy loops on NIO event loops", .serialized)
struct BusyLoopTests {
    let configuration = WatchdogConfiguration(threshold: .milliseconds(500), watchPoolJobs: false,
                                              busyLoopWindow: .seconds(2))

    /// Runs `work` on a one-loop group watched by a fresh watchdog for `seconds`.
    func watch(seconds: Double, _ work: @escaping @Sendable (any EventLoop, StopFlag) -> Void) throws -> Reports {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let reports = Reports()
        let watchdog = try Watchdog(configuration: configuration) { reports.append($0) }
        watchdog.monitor(eventLoopGroup: group)
        try watchdog.start()
        let stop = StopFlag()
        let loop = group.next()
        loop.execute { work(loop, stop) }
        usleep(UInt32(seconds * 1_000_000))
        stop.value.store(true, ordering: .relaxed)
        usleep(100_000)
        watchdog.stop()
        return reports
    }

    @Test("a task that re-enqueues itself keeps its loop busy: one busyLoop report blaming it, no stall")
    func selfReschedulingTask() throws {
        let reports = try watch(seconds: 4.5) { loop, stop in stallwatchFixtureSpinAgain(loop, stop) }
        #expect(reports.busyLoops.count == 1, "\(reports.busyLoops.map(\.id))")
        #expect(reports.stalls.isEmpty, "each slice is 2 ms: no stall")
        let report = try #require(reports.busyLoops.first)
        #expect(report.kind == .busyLoop)
        #expect(report.loopName?.hasPrefix("nio-loop-") == true)
        let names = report.blamedStack.compactMap(\.symbol)
        #expect(names.contains { $0.contains("stallwatchFixtureSpinAgain") }, "\(names)")
        #expect(report.duration >= .seconds(2))
    }

    @Test("a loop busy half the time, in short tasks: healthy, never reported")
    func halfBusy() throws {
        let reports = try watch(seconds: 4.5) { loop, stop in stallwatchFixtureHalfBusy(loop, stop) }
        #expect(reports.busyLoops.isEmpty, "\(reports.busyLoops.map { $0.cause?.evidence ?? "" })")
        #expect(reports.stalls.isEmpty)
    }
}

/// Spins 2 ms, then queues itself again: the loop never idles, each task is short.
@inline(never)
func stallwatchFixtureSpinAgain(_ loop: any EventLoop, _ stop: StopFlag) {
    spin(milliseconds: 2)
    guard !stop.value.load(ordering: .relaxed) else { return }
    loop.execute { stallwatchFixtureSpinAgain(loop, stop) }
}

/// Spins 2 ms, then idles 2 ms before the next task.
@inline(never)
func stallwatchFixtureHalfBusy(_ loop: any EventLoop, _ stop: StopFlag) {
    spin(milliseconds: 2)
    guard !stop.value.load(ordering: .relaxed) else { return }
    loop.scheduleTask(in: .milliseconds(2)) { stallwatchFixtureHalfBusy(loop, stop) }
}

@inline(never)
func spin(milliseconds: Int) {
    let clock = ContinuousClock()
    let end = clock.now + .milliseconds(milliseconds)
    var x: UInt64 = 1
    while clock.now < end { for _ in 0..<100 { x = x &* 6364136223846793005 &+ 1 } }
    if x == 7 { print("") }
}
