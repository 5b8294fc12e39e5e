import CSampler
import CSamplerTestSupport
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Stallwatch

/// The design's promise: sampling never changes the program's behaviour. A thread that keeps
/// entering blocking system calls between CPU bursts is sampled at 1 kHz (20 times the default
/// rate) by the timer ring; none of its calls may return EINTR. STALLWATCH_EINTR_SECONDS sets the
/// length (10 s by default; the acceptance run uses 60).
@Suite("No EINTR", .serialized)
struct NoEINTRTests {
    @Test("nanosleep, epoll_wait and read between CPU bursts, sampled at 1 kHz: no EINTR")
    func sampledThreadSeesNoEINTR() throws {
        let seconds = Double(ProcessInfo.processInfo.environment["STALLWATCH_EINTR_SECONDS"] ?? "") ?? 10
        let sampler = try StackSampler()
        let result = Mutex<(eintr: UInt64, calls: UInt64, rc: Int32)>((0, 0, 0))
        let ready = DispatchSemaphore(value: 0)
        let worker = TestThread(name: "sw-eintr") { _ in
            ready.wait()
            var eintr: UInt64 = 0, calls: UInt64 = 0
            let rc = sw_test_burst_and_block(seconds, 300, &eintr, &calls)
            result.withLock { $0 = (eintr, calls, rc) }
        }
        let ring = try SamplingRing(sampler: sampler, thread: try #require(worker.tid), interval: .milliseconds(1),
                                    clock: .threadCPU, capacity: 64, maxFrames: 64)
        defer { ring.stop() }
        ready.signal()
        worker.stopAndJoin(timeout: .seconds(seconds + 30))
        let r = result.withLock { $0 }
        #expect(r.rc == 0)
        #expect(r.calls > 1000)
        #expect(ring.taken > 100, "the thread was hardly sampled: \(ring.taken)")
        #expect(r.eintr == 0, "\(r.eintr) of \(r.calls) blocking calls returned EINTR under \(ring.taken) samples")
    }
}
