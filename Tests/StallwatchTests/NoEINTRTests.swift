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

    /// A capture asked of a thread the caller last saw running: by the time the signal would go,
    /// the thread may sleep, and the signal would end its `nanosleep` early. Each of 100 captures
    /// here finds the thread asleep (20 ms sleeps, microseconds between them); without the check
    /// just before the signal, about every one of them ended a sleep with EINTR.
    @Test("a capture of a thread asleep in nanosleep sends no signal: its stack comes from the kernel")
    func captureOfSleepingThreadSendsNoSignal() throws {
        let sampler = try StackSampler()
        let eintr = Atomic<Int>(0), sleeps = Atomic<Int>(0)
        let worker = TestThread(name: "sw-asleep") { t in
            while !t.shouldStop {
                var ts = timespec(tv_sec: 0, tv_nsec: 20_000_000)
                if nanosleep(&ts, nil) != 0 && errno == EINTR { eintr.add(1, ordering: .relaxed) }
                sleeps.add(1, ordering: .relaxed)
            }
        }
        let tid = try #require(worker.tid)
        #expect(eventually { sleeps.load(ordering: .relaxed) > 0 })
        var stacks = 0, fromKernel = 0
        var failures: [String] = []
        for _ in 0..<100 {
            do {
                let stack = try sampler.signalCapture(tid, unwinder: .framePointer, timeout: .milliseconds(100))
                stacks += 1
                if stack.unwinder == .syscallScan { fromKernel += 1 }
            } catch {
                failures.append("\(error)")
            }
            usleep(3_000)
        }
        worker.stopAndJoin(timeout: .seconds(5))
        #expect(stacks == 100, "\(failures.prefix(3))")
        #expect(fromKernel >= 90, "\(fromKernel) of \(stacks) stacks from the kernel's SP/PC")
        // The thread runs a few microseconds between its sleeps: a capture may meet it there.
        #expect(eintr.load(ordering: .relaxed) <= 1, "\(eintr.load(ordering: .relaxed)) of \(sleeps.load(ordering: .relaxed)) sleeps ended by EINTR")
    }
}
