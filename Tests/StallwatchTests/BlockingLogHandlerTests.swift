import Dispatch
import Foundation
import Glibc
import Logging
import Synchronization
import Testing
@testable import Stallwatch

/// A log handler whose writes wait until the test opens its gate, as a write to stderr waits while
/// the pipe's reader has stopped reading. It records every message it wrote.
private final class GatedLogHandlerState: Sendable {
    let gate = DispatchSemaphore(value: 0)
    let opened = Atomic<Bool>(false)
    let written = Mutex<[String]>([])
    let waiting = Atomic<Int>(0)

    func open() {
        opened.store(true, ordering: .releasing)
        for _ in 0..<1000 { gate.signal() }
    }
}

private struct GatedLogHandler: LogHandler {
    let state: GatedLogHandlerState
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        if !state.opened.load(ordering: .acquiring) {
            state.waiting.add(1, ordering: .relaxed)
            state.gate.wait()
        }
        state.written.withLock { $0.append(event.message.description) }
    }
}

@Suite("Log handler that blocks", .serialized)
struct BlockingLogHandlerTests {
    /// A blocked log handler held the watchdog thread from its first stall's log line on: the
    /// second stall was never detected. Now both are, and the lines arrive once the handler writes
    /// again, by `stop()` at the latest.
    @Test("a log handler that blocks delays no stall event; its lines arrive when it writes again")
    func blockedHandlerDelaysNoEvent() throws {
        let state = GatedLogHandlerState()
        let logger = Logger(label: "blocked-log") { _ in GatedLogHandler(state: state) }
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(200)),
                                    logger: logger, metrics: nil) { log.append($0) }
        let probe = watchdog.makeProbe(name: "blocked-log")
        try watchdog.start()
        defer { state.open(); watchdog.stop() }
        let worker = TestThread(name: "sw-blocked-log") { _ in
            for _ in 0..<2 {
                probe.busy()
                stallwatchFixtureCPUStall(milliseconds: 400)
                probe.idle()
                usleep(300_000)
            }
        }
        worker.stopAndJoin(timeout: .seconds(10))
        #expect(eventually(timeout: .seconds(3)) { log.stalls.count == 2 && log.ended.count == 2 },
                "\(log.stalls.count) stall events, \(log.ended.count) ends, with the log handler blocked")
        #expect(state.waiting.load(ordering: .relaxed) >= 1, "the handler was never called while blocked")
        state.open()
        watchdog.stop()
        let written = state.written.withLock { $0 }
        #expect(written.filter { $0.hasPrefix("blocked-log stalled ") }.count == 2, "\(written)")
        #expect(written.filter { $0.hasPrefix("blocked-log stall ended after ") }.count == 2, "\(written)")
    }

    /// Lines posted just before `stop()` are written by it: none is left behind in the queue.
    @Test("stop() hands every pending line to the handler")
    func stopFlushesLines() throws {
        let state = GatedLogHandlerState()
        state.open()
        let logger = Logger(label: "flushed-log") { _ in GatedLogHandler(state: state) }
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(150)),
                                    logger: logger, metrics: nil) { log.append($0) }
        let probe = watchdog.makeProbe(name: "flushed-log")
        try watchdog.start()
        let worker = TestThread(name: "sw-flushed-log") { _ in
            probe.busy()
            stallwatchFixtureCPUStall(milliseconds: 300)
            probe.idle()
        }
        worker.stopAndJoin(timeout: .seconds(10))
        #expect(eventually(timeout: .seconds(3)) { log.ended.count == 1 })
        watchdog.stop()
        let written = state.written.withLock { $0 }
        #expect(written.contains { $0.hasPrefix("flushed-log stalled ") }
                && written.contains { $0.hasPrefix("flushed-log stall ended after ") }, "\(written)")
    }

    /// A handler blocked for good keeps at most ``WatchdogLogQueue/limit`` lines waiting; the rest
    /// are counted, and one error line says how many once it writes again.
    @Test("lines past the limit are dropped and counted in one error line")
    func overflowIsCounted() throws {
        let state = GatedLogHandlerState()
        let queue = WatchdogLogQueue()
        let logger = Logger(label: "overflow") { _ in GatedLogHandler(state: state) }.writing(through: queue)
        // The queue's thread first blocks in the handler on one line; the flood then waits behind it.
        logger.info("first")
        #expect(eventually(timeout: .seconds(3)) { state.waiting.load(ordering: .relaxed) == 1 })
        for i in 0..<(WatchdogLogQueue.limit + 10) { logger.info("line \(i)") }
        state.open()
        #expect(queue.flush())
        let written = state.written.withLock { $0 }
        #expect(written.count == 1 + WatchdogLogQueue.limit + 1, "\(written.count)")
        #expect(written.first == "first" && written.dropFirst().first == "line 0")
        #expect(written.dropLast().last == "line \(WatchdogLogQueue.limit - 1)")
        #expect(written.last == "10 Stallwatch log lines dropped: the log handler did not keep up", "\(written.last ?? "")")
    }
}
