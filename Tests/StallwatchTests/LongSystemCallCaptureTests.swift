import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import Stallwatch

/// One `pread` of a 1 GiB sparse file into one buffer: the kernel copies it (or fills the page
/// cache with its holes) in one call that takes from half a second to a few, and a signal sent
/// meanwhile waits for the call's return.
@inline(never) func longReadFixtureOneCall(_ thread: TestThread) {
    let path = NSTemporaryDirectory() + "stallwatch-test-longread-\(getpid())"
    let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { return }
    defer { close(fd); unlink(path) }
    let size = 1 << 30
    guard ftruncate(fd, off_t(size)) == 0, let buffer = malloc(size) else { return }
    defer { free(buffer) }
    while !thread.shouldStop {
        thread.counter.add(1, ordering: .releasing)
        _ = pread(fd, buffer, size, 0)
    }
}

@Suite("A thread inside one long system call", .serialized)
struct LongSystemCallCaptureTests {
    /// The signal cannot be handled before the read returns; the capture must not come back empty
    /// (or late, after the call) but with the stack the call was made from, by the kernel's sample.
    @Test("its stack is the kernel's sample of it, taken inside the call")
    func capturedInsideTheCall() throws {
        let sampler = try StackSampler()
        let thread = TestThread(name: "sw-longread") { longReadFixtureOneCall($0) }
        defer { thread.stopAndJoin(timeout: .seconds(30)) }
        let tid = try #require(thread.tid)
        #expect(eventually { thread.counter.load(ordering: .acquiring) > 0 })
        usleep(100_000)  // inside the first read, which lasts far longer
        let before = thread.counter.load(ordering: .acquiring)
        let result: Result<CapturedStack, SamplerError>
        do throws(SamplerError) {
            result = .success(try sampler.captureStack(of: tid, timeout: .milliseconds(50)))
        } catch {
            result = .failure(error)
        }
        if case .failure(let error) = result, error.isRefusal {
            print("perf events refused here: \(error)")
            return
        }
        var stack = try result.get()
        // Still the same read: the stack cannot have come from after it.
        #expect(thread.counter.load(ordering: .acquiring) == before, "the read ended before the capture")
        #expect(stack.driver == .perfEvent, "\(String(describing: stack.driver))")
        if stack.walkEnd == .timedOut {
            // On a loaded machine the sample can come late in the capture's 50 ms and its walk stop
            // at that bound, said so (one frame, in CI once). The walk itself is checked on a sample
            // of the same read with room to finish.
            stack = try sampler.perfCapture(tid, timeout: .seconds(2))
            #expect(thread.counter.load(ordering: .acquiring) == before, "the read ended before the second sample")
        }
        let names = Symbolizer.shared.symbolize(stack).map { $0.symbol ?? "?" }
        let end = stack.walkEnd?.name ?? "nil"
        #expect(names.contains { $0.contains("longReadFixtureOneCall") }, "\(names), walk ended: \(end)")
        #expect(names.first?.contains("pread") == true, "\(names), walk ended: \(end)")
    }

    /// The first request's signal stays pending until the read returns, and a second signal would
    /// be merged into it (SIGPROF is a standard signal): a second capture used to wait its whole
    /// timeout for an answer that could not come. It now says at once that the thread has not
    /// answered since the first request.
    @Test("a capture after one that timed out does not wait while that signal is still pending")
    func secondCaptureDoesNotWait() throws {
        let sampler = try StackSampler()
        let thread = TestThread(name: "sw-longread2") { longReadFixtureOneCall($0) }
        defer { thread.stopAndJoin(timeout: .seconds(30)) }
        let tid = try #require(thread.tid)
        #expect(eventually { thread.counter.load(ordering: .acquiring) > 0 })
        // Each attempt needs both captures inside one read; a read that ended between them (a
        // loaded machine) proves nothing, and the next read is tried.
        for _ in 0..<3 {
            usleep(100_000)  // inside a read, which lasts far longer
            let read = thread.counter.load(ordering: .acquiring)
            let first = Self.error(of: { () throws(SamplerError) in
                _ = try sampler.signalCapture(tid, unwinder: .framePointer, timeout: .milliseconds(30))
            })
            guard case .timedOut = first, thread.counter.load(ordering: .acquiring) == read else { continue }
            let longTimeout = Duration.seconds(20)
            let second = Self.error(of: { () throws(SamplerError) in
                _ = try sampler.signalCapture(tid, unwinder: .framePointer, timeout: longTimeout)
            })
            guard thread.counter.load(ordering: .acquiring) == read else { continue }
            guard case .timedOut(let t, let after) = second else {
                Issue.record("the second capture, still inside the read: \(String(describing: second))")
                return
            }
            #expect(t == tid)
            // How long the thread has not answered (since the first signal), not this capture's
            // own timeout, which it did not wait for.
            #expect(after > .zero && after < longTimeout, "\(after)")
            return
        }
        // A second capture that waited for its answer outlasts the read every time.
        Issue.record("in 3 tries, no second capture came back inside the read that kept the first one's signal pending")
    }

    private static func error(of body: () throws(SamplerError) -> Void) -> SamplerError? {
        do throws(SamplerError) {
            try body()
            return nil
        } catch {
            return error
        }
    }
}
