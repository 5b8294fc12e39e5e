import Foundation
import Synchronization
import StallwatchReport
import Testing
@testable import Stallwatch

@Suite("Thread roster")
struct ThreadRosterTests {
    @Test("lists again when a thread is born or gone, or when the listing is old; not otherwise")
    func listsOnlyWhenNeeded() throws {
        let roster = ThreadRoster(maximumAge: .seconds(60))
        let t0 = MonotonicClock.now()
        #expect(try roster.refresh(now: t0), "the first refresh lists")
        #expect(roster.threads.contains(ThreadID.current))
        // Same thread count, young listing: kept. (Another thread of the test process may start or
        // exit between two refreshes: a few tries.)
        var kept = false
        for i in 1...5 where !kept {
            _ = try roster.refresh(now: t0 + .microseconds(i * 2))
            kept = try !roster.refresh(now: t0 + .microseconds(i * 2 + 1))
        }
        #expect(kept, "listed again at every refresh")
        let born = TestThread(name: "sw-roster") { t in while !t.shouldStop { usleep(1000) } }
        let tid = try #require(born.tid)
        #expect(try roster.refresh(now: t0 + .milliseconds(2)), "a thread was born: listed again")
        #expect(roster.threads.contains(tid))
        born.stopAndJoin()
        #expect(try roster.refresh(now: t0 + .milliseconds(3)), "a thread is gone: listed again")
        #expect(!roster.threads.contains(tid))
        #expect(try roster.refresh(now: t0 + .seconds(61)), "older than its maximum age: listed again")
        #expect(roster.listedAt == t0 + .seconds(61))
    }

    @Test("a listing that fails is thrown and kept as the roster's last error, until one succeeds")
    func failedListingIsKept() throws {
        let failing = Atomic<Bool>(true)
        let roster = ThreadRoster(maximumAge: .zero) { (threads: inout [ThreadID]) throws(ThreadError) in
            if failing.load(ordering: .relaxed) { throw ThreadError.system(operation: "listing a test directory", errno: EMFILE) }
            threads = [ThreadID.current]
        }
        let t0 = MonotonicClock.now()
        #expect(throws: ThreadError.system(operation: "listing a test directory", errno: EMFILE)) { try roster.refresh(now: t0) }
        #expect(roster.lastError == .system(operation: "listing a test directory", errno: EMFILE))
        #expect(roster.listedAt == nil && roster.threads.isEmpty)
        failing.store(false, ordering: .relaxed)
        #expect(try roster.refresh(now: t0 + .milliseconds(1)))
        #expect(roster.lastError == nil && roster.threads == [ThreadID.current])
    }
}
