import CSampler
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Stallwatch

/// The first job a process runs on the cooperative pool lands on a worker created for it, which
/// carries its creator's name until it names itself after its root queue. A scan that lists it
/// before that must not lose it: its name is read again at the next scans, not 16 scans later.
@Suite("The pool's first job", .serialized)
struct PoolFirstJobTests {
    @Test("a thread that names itself a worker after its first listing is watched from the next scan")
    func workerNamedLate() throws {
        let watcher = PoolJobWatcher(sampler: try StackSampler(), symbolizer: .shared)
        try #require(watcher.isAvailable)
        for _ in 0..<2 { _ = watcher.scan(now: MonotonicClock.now(), maySignal: false) }
        let rename = Atomic<Bool>(false)
        let renamed = Atomic<Bool>(false)
        // Blocked inside libdispatch frames (a queue's `sync` runs on the caller), as a worker is.
        let queue = DispatchQueue(label: "sw-first-job")
        let named = Atomic<Bool>(false)
        let late = TestThread(name: "sw-unnamed") { thread in
            // Its kernel name, not only Foundation's: a thread started from a test inherits a
            // pool worker's name.
            _ = sw_thread_set_name("sw-unnamed")
            named.store(true, ordering: .releasing)
            while !rename.load(ordering: .acquiring) { usleep(1_000) }
            queue.sync {
                _ = sw_thread_set_name("sw-late-qos")
                renamed.store(true, ordering: .releasing)
                while !thread.shouldStop { usleep(20_000) }
            }
        }
        defer { late.stopAndJoin() }
        let tid = try #require(late.tid)
        try #require(eventually(timeout: .seconds(2)) { named.load(ordering: .acquiring) })
        _ = watcher.scan(now: MonotonicClock.now(), maySignal: false)
        #expect(watcher.waitsForWork(tid) == nil, "the premise: listed under another name first")
        rename.store(true, ordering: .releasing)
        #expect(eventually(timeout: .seconds(2)) { renamed.load(ordering: .acquiring) })
        usleep(30_000)
        _ = watcher.scan(now: MonotonicClock.now(), maySignal: false)
        #expect(watcher.waitsForWork(tid) != nil, "the new worker was not looked at again")
    }

    @Test("a thread not named a worker is young for a few scans, read at each, then ever more rarely")
    func otherThreadSchedule() {
        var other = PoolOtherThread(firstListedBy: 10, bornAfter: nil)
        var reads: [Int] = []
        for scan in 11...200 where scan >= other.retry {
            reads.append(scan)
            other.stillOther(at: scan)
        }
        #expect(Array(reads.prefix(PoolOtherThread.youngScans - 1)) == Array(11..<(10 + PoolOtherThread.youngScans)))
        #expect(other.isYoung(at: 10 + PoolOtherThread.youngScans - 1))
        #expect(!other.isYoung(at: 10 + PoolOtherThread.youngScans))
        let gaps = zip(reads.dropFirst(), reads).map { $0 - $1 }.drop { $0 == 1 }
        #expect(Array(gaps.prefix(3)) == [16, 32, 64], "\(reads)")
    }
}
