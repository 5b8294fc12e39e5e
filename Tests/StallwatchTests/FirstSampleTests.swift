import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Stallwatch

/// A new ring's first sample comes after a short stretch of the thread's CPU time, not a whole
/// interval: a suspected loop starved of CPU still has a sample by its threshold.
@Suite("A ring's first sample", .serialized)
struct FirstSampleTests {
    /// Spins until `deadline` or until `done` holds.
    @inline(never)
    static func spin(until deadline: ContinuousClock.Instant, _ done: () -> Bool) -> UInt64 {
        var x: UInt64 = 1
        while ContinuousClock.now < deadline && !done() {
            for _ in 0..<1000 { x = x &* 6364136223846793005 &+ 1442695040888963407 }
        }
        return x
    }

    @Test("with an interval of 1 s of CPU, sampleFirst(after: 1 ms) samples a spinning thread within its first 200 ms",
          arguments: [true, false])
    func firstSampleSoon(_ early: Bool) throws {
        let sampler = try StackSampler()
        let stop = Atomic<Bool>(false)
        let worker = TestThread(name: "sw-first") { _ in
            _ = Self.spin(until: .now + .seconds(3)) { stop.load(ordering: .relaxed) }
        }
        defer {
            stop.store(true, ordering: .relaxed)
            worker.stopAndJoin()
        }
        let ring = try SamplingRing(sampler: sampler, thread: try #require(worker.tid), interval: .seconds(1),
                                    clock: .threadCPU, capacity: 8, maxFrames: 64)
        defer { ring.stop() }
        if early { #expect(ring.sampleFirst(after: .milliseconds(1))) }
        usleep(200_000)
        let taken = ring.drain().count
        // The thread cannot have burnt 1 s of CPU in 200 ms: only the early first sample is there.
        #expect(early ? taken >= 1 : taken == 0, "\(taken) samples")
    }
}
