import Dispatch
import Foundation
import Glibc
import StallwatchReport
import Synchronization
import Testing
@testable import Stallwatch

@inline(never)
func poolFixtureTimedWait(_ gate: DispatchSemaphore, milliseconds: Int) {
    _ = gate.wait(timeout: .now() + .milliseconds(milliseconds))
}

/// A pool job the scans cannot tell (its stack ends before the job runner, or cannot be captured)
/// is never a silent miss: it is reported, or an `error` event names its worker and says why.
@Suite("Pool workers that cannot be watched", .serialized)
struct PoolUnwatchedTests {
    @Test("said once per stretch, once it lasted the threshold")
    func oncePerStretch() {
        var u = PoolUnwatched()
        let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)
        #expect(u.due(now: t0, after: .milliseconds(300)) == nil, "nothing failed yet")
        u.failed(now: t0, why: "cut")
        #expect(u.due(now: t0 + .milliseconds(200), after: .milliseconds(300)) == nil)
        u.failed(now: t0 + .milliseconds(250), why: "cut at f")
        #expect(u.due(now: t0 + .milliseconds(300), after: .milliseconds(300)) == "cut at f")
        #expect(u.due(now: t0 + .milliseconds(900), after: .milliseconds(300)) == nil, "said twice")
    }

    /// `DispatchSemaphore.wait(timeout:)` in a job: today's walk of such a blocked stack ends in
    /// libswiftDispatch (no unwind info), before `swift_job_run`. Whether or not a later walker
    /// crosses it, the job must not pass unnoticed.
    @Test("a job blocked where its stack cannot be walked is reported or named in an error event")
    func blockedUnwalkedJob() async throws {
        let log = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(300))) { log.append($0) }
        try watchdog.start()
        defer { watchdog.stop() }
        try await Task.sleep(for: .milliseconds(300))
        let tid = Mutex<Int32>(0)
        let gate = DispatchSemaphore(value: 0)
        await Task.detached {
            tid.withLock { $0 = ThreadID.current.rawValue }
            poolFixtureTimedWait(gate, milliseconds: 1_500)
        }.value
        try await Task.sleep(for: .milliseconds(300))
        let worker = tid.withLock { $0 }
        // Reported: named by its stack, or dated by its enqueue stamp whatever its stack shows
        // (then the report's stack says where its walk ended).
        let reported = log.allStalls.contains { r in
            r.loopName == PoolJobWatcher.loopName && r.thread?.id == worker
                && (r.blamedStack.contains { $0.symbol?.contains("poolFixtureTimedWait") == true }
                    || PoolJobStamps.isReadable)
        }
        let said = log.errors.contains { $0.contains("pool worker \(worker) ") }
        #expect(reported || said, "silence: \(log.events.withLock { $0.map(\.jsonLine) })")
    }
}
