import CSamplerTestSupport
import Dispatch
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Stallwatch

@Suite("Stacks of threads blocked in system calls, without signals")
struct SyscallScanTests {
    @Test("a Dispatch worker asleep in usleep: the scan reaches past libc into the caller and Dispatch")
    func dispatchWorkerInUsleep() throws {
        let sampler = try StackSampler()
        let queue = DispatchQueue(label: "sw-scan")
        let tid = Atomic<Int32>(0)
        let done = Atomic<Bool>(false)
        queue.async {
            tid.store(ThreadID.current.rawValue, ordering: .releasing)
            stallwatchFixtureSleep(microseconds: 600_000)
            done.store(true, ordering: .releasing)
        }
        #expect(eventually { tid.load(ordering: .acquiring) != 0 })
        let thread = ThreadID(rawValue: tid.load(ordering: .acquiring))
        #expect(eventually { (try? ThreadInfoProbe.syscallNumber(thread)) == 230 }) // clock_nanosleep
        let stack = try sampler.captureBlockedStack(of: thread)
        let names = Symbolizer.shared.symbolize(stack).compactMap(\.symbol)
        // libc's own frames first (no frame pointers there), then the frame-record chain.
        #expect(names.first == "clock_nanosleep", "\(names)")
        #expect(names.contains { $0.contains("stallwatchFixtureSleep") }, "\(names)")
        #expect(names.contains { $0.hasPrefix("_dispatch_") }, "\(names)")
        #expect(eventually(timeout: .seconds(2)) { done.load(ordering: .acquiring) })
    }

    @Test("a frame record left behind by a returned call is not taken for the first live one")
    func ghostRecordSkipped() {
        var got = [UInt64](repeating: 0, count: 16), expected = [UInt64](repeating: 0, count: 16)
        var gotCount: UInt32 = 0, expectedCount: UInt32 = 0
        let rc = sw_test_blocked_scan_ghost(&got, &gotCount, &expected, &expectedCount)
        #expect(rc == 0)
        // Before: PC, the first wrapper's return, the ghost's stale return, then the chain from the
        // ghost's saved FP, skipping the live frame between.
        #expect(Array(got.prefix(Int(gotCount))) == Array(expected.prefix(Int(expectedCount))))
    }
}
