import CSampler
import CSamplerTestSupport
import Glibc
import Testing
@testable import Stallwatch

@Suite("fork", .serialized)
struct ForkTests {
    /// A thread spinning until stopped, sampled every millisecond of its CPU time by a ring.
    static func busyThreadSampledAt1kHz(_ sampler: StackSampler) throws -> (TestThread, SamplingRing) {
        let worker = TestThread(name: "sw-fork-busy") { t in
            var x: UInt64 = 1
            while !t.shouldStop { for _ in 0..<10_000 { x = x &* 6364136223846793005 &+ 1 } }
            if x == 42 { print("") }
        }
        let ring = try SamplingRing(sampler: sampler, thread: try #require(worker.tid), interval: .milliseconds(1),
                                    clock: .threadCPU, capacity: 64, maxFrames: 64)
        return (worker, ring)
    }

    @Test("a forked child gets its own thread id, keeps the parent's ring timers apart, and samples its own work")
    func childIsClean() throws {
        let sampler = try StackSampler()
        // A ring on a busy thread of the parent, so the child inherits a live ring entry and its timer id.
        let (worker, ring) = try Self.busyThreadSampledAt1kHz(sampler)
        defer { worker.stopAndJoin() }
        defer { ring.stop() }
        let status = sw_test_fork_child(ring.index, 1000)
        #expect(status == 0, "child exit status \(status): 10 tid cache, 11 timer deleted, 12 no samples, 13 no ring")
        usleep(50_000)
        #expect(ring.taken > 0, "the parent's ring stopped sampling after fork")
    }

    @Test("200 fork + exec while a thread is sampled at 1 kHz: every child runs")
    func forkExecWhileSampling() throws {
        let sampler = try StackSampler()
        let (worker, ring) = try Self.busyThreadSampledAt1kHz(sampler)
        defer { worker.stopAndJoin() }
        defer { ring.stop() }
        #expect(sw_test_fork_exec_many(200) == 0)
        #expect(ring.taken > 0)
    }
}
