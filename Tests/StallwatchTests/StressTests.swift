import CSampler
import CSamplerTestSupport
import Foundation
import Glibc
import Synchronization
import Testing
@testable import Stallwatch

/// Sampling at 1 kHz while the target loops on dlopen/dlclose and malloc/free and threads come and
/// go. In-handler libunwind deadlocks on the loader lock here (a handler's `unw_step` reached
/// `dl_iterate_phdr` while the same thread's `dlclose` held that lock: hung forever, seen under gdb);
/// ours must not: no crash, no hang, every capture answered or timed out within its deadline.
///
/// Short by default; `STALLWATCH_STRESS_SECONDS=120 swift test --filter Stress` for a long run.
@Suite("Stress: 1 kHz sampling against dlopen/malloc/thread churn", .serialized)
struct StressTests {
    static let seconds: Double = {
        ProcessInfo.processInfo.environment["STALLWATCH_STRESS_SECONDS"].flatMap(Double.init) ?? 2.0
    }()

    @Test(arguments: [Unwinder.framePointer, .libunwind])
    func stress(unwinder: Unwinder) throws {
        let sampler = try StackSampler()
        let candidates: [String] = ["libbz2.so.1.0", "libexpat.so.1", "libz.so.1"]
        let library = candidates.first { (lib: String) -> Bool in
            dlopen(lib, RTLD_NOW | RTLD_NOLOAD) == nil && dlopen(lib, RTLD_LAZY).map { dlclose($0); return true } == true
        }
        let lib = try #require(library, "no unloadable library to dlopen")
        let symbol = lib.hasPrefix("libbz2") ? "BZ2_bzlibVersion" : lib.hasPrefix("libexpat") ? "XML_ExpatVersion" : "zlibVersion"
        let stopFlag = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        stopFlag.pointee = 0
        defer { stopFlag.deallocate() }
        let flagAddress = UInt(bitPattern: stopFlag)
        let iterations = Atomic<Int64>(0)
        let loader = TestThread(name: "sw-dlopen") { _ in
            let flag = UnsafeMutablePointer<Int32>(bitPattern: flagAddress)
            iterations.store(sw_test_dlopen_malloc_loop(lib, symbol, flag), ordering: .releasing)
        }
        // Threads are created and exit all the time; only this test's threads are signalled (other
        // suites run in parallel and their threads must not see our signals).
        let recent = Mutex<[ThreadID]>([])
        let churn = TestThread(name: "sw-churn") { t in
            while !t.shouldStop {
                let short = TestThread(name: "sw-short") { _ in
                    var x = 0
                    for i in 0..<2_000_000 { x &+= i }
                    _ = x
                }
                if let tid = short.tid { recent.withLock { $0 = Array(($0 + [tid]).suffix(4)) } }
                short.stopAndJoin()
            }
        }
        let loaderTid = try #require(loader.tid as ThreadID?)
        let timeout = Duration.milliseconds(50)
        let clock = ContinuousClock()
        let end = clock.now + .milliseconds(Int64(Self.seconds * 1000))
        var answered = 0, timedOut = 0, gone = 0, worst = Duration.zero
        var churnCaptures = 0
        while clock.now < end {
            let t0 = clock.now
            switch Result(catching: { () throws(SamplerError) in
                try sampler.signalCapture(loaderTid, unwinder: unwinder, timeout: timeout)
            }) {
            case .success: answered += 1
            case .failure(.timedOut): timedOut += 1
            case .failure(let error): Issue.record("unexpected error \(error)")
            }
            worst = max(worst, clock.now - t0)
            // Now and then a thread of the churn, which may be gone by the time it is signalled.
            if answered % 10 == 0 {
                for tid in recent.withLock({ $0 }) {
                    switch Result(catching: { () throws(SamplerError) in
                        try sampler.signalCapture(tid, unwinder: unwinder, timeout: timeout)
                    }) {
                    case .success: churnCaptures += 1
                    case .failure(.threadGone): gone += 1
                    case .failure(.timedOut): timedOut += 1
                    case .failure(.signalBlocked): break
                    case .failure(let error): Issue.record("unexpected error \(error) for \(tid)")
                    }
                }
            }
            usleep(1000)
        }
        stopFlag.pointee = 1
        loader.stopAndJoin(timeout: Duration.seconds(10))
        churn.stopAndJoin(timeout: Duration.seconds(10))
        let loops = iterations.load(ordering: .acquiring)
        print("stress \(unwinder): \(answered) answered, \(timedOut) timed out, \(gone) gone, \(churnCaptures) churn captures, worst \(worst), \(loops) dlopen loops")
        #expect(loops > 0, "the dlopen loop did not run")
        #expect(answered > Int(Self.seconds * 100), "too few answers: \(answered)")
        // The deadline covers the whole capture (signal, unwind, new-thread check, classification):
        // every capture returns within it plus 10 ms (1 ms grace for a handler already running).
        #expect(worst <= timeout + .milliseconds(10), "a capture took \(worst)")
    }
}
