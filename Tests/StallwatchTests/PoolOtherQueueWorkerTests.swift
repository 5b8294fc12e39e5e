import CSampler
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Stallwatch

/// A worker of another root queue that carries the pool's worker name (Linux gives a new thread
/// its creator's name) must not make a starved pool look free: the pool's ping would never be
/// posted, and the starved pool never reported.
@Suite("A look at the pool ignores other queues' workers named alike", .serialized)
struct PoolOtherQueueWorkerTests {
    /// Scans until `condition` holds (bounded).
    func scan(_ watcher: PoolJobWatcher, until condition: () -> Bool) -> Bool {
        for _ in 0..<100 {
            _ = watcher.scan(now: MonotonicClock.now(), maySignal: false)
            if condition() { return true }
            usleep(20_000)
        }
        return false
    }

    @Test("every worker of the pinged pool busy, an idle worker of another queue named like them: not free")
    func foreignIdleWorkerNamedAlike() throws {
        let watcher = PoolJobWatcher(sampler: try StackSampler(), symbolizer: .shared)
        try #require(watcher.isAvailable)
        // The pool: the background root queue, which nothing else in the tests uses.
        let pool = DispatchQueue.global(qos: .background)
        let pingerBox = Atomic<Int32>(0)
        pool.async { pingerBox.store(ThreadID.current.rawValue, ordering: .releasing) }
        try #require(eventually(timeout: .seconds(2)) { pingerBox.load(ordering: .acquiring) != 0 })
        let pinger = ThreadID(rawValue: pingerBox.load(ordering: .acquiring))
        let name = try ThreadInfo.read(pinger).name
        try #require(scan(watcher) { watcher.waitsForWork(pinger) == true }, "the pinger seen waiting for work")
        #expect(watcher.look(atPoolNamed: name, pingedOn: pinger).free, "the premise: an idle pool is free")

        // A utility worker renamed like the pool's, as an inherited name would be; then idle.
        let foreignBox = Atomic<Int32>(0)
        DispatchQueue.global(qos: .utility).async {
            _ = sw_thread_set_name(name)
            foreignBox.store(ThreadID.current.rawValue, ordering: .releasing)
        }
        try #require(eventually(timeout: .seconds(2)) { foreignBox.load(ordering: .acquiring) != 0 })
        let foreign = ThreadID(rawValue: foreignBox.load(ordering: .acquiring))
        try #require(scan(watcher) { watcher.waitsForWork(foreign) == true }, "the foreign worker seen waiting for work")

        // Every worker of the pool blocked: as many blocks as it has workers, and one more.
        let release = DispatchSemaphore(value: 0)
        let workers = PoolLookTests.workers(named: name).count
        let blocks = max(workers, 1) + 1
        for _ in 0..<blocks { pool.async { release.wait() } }
        defer { for _ in 0..<blocks { release.signal() } }
        try #require(scan(watcher) { watcher.waitsForWork(pinger) == false }, "the pinger blocked")
        _ = watcher.scan(now: MonotonicClock.now(), maySignal: false)
        let look = watcher.look(atPoolNamed: name, pingedOn: pinger)
        #expect(!look.free, "an idle worker of another queue made the starved pool look free")
        #expect(look.busyWorker != foreign)
    }
}
