import CSampler
import CSamplerTestSupport
import Foundation
import Glibc
import Synchronization
import StallwatchPolicy
import StallwatchReport
import Testing
@testable import Stallwatch

@Suite("Stack capture by signal", .serialized)
struct CaptureTests {
    let sampler: StackSampler

    init() throws {
        sampler = try StackSampler()
    }

    @Test("a thread parked at a known depth is captured by each unwinder, names in order",
          arguments: [Unwinder.framePointer, .libunwind])
    func knownDepth(unwinder: Unwinder) throws {
        let depth = 7 // the alpha order of depth 7 ends at beta, which is odd-numbered: both appear
        let worker = TestThread(name: "sw-depth") { t in _ = stallwatchFixtureAlpha(depth, t) }
        defer { worker.stopAndJoin() }
        let tid = try #require(worker.tid)
        let expected = expectedFixtureNames(depth: depth)
        var names: [String] = []
        // The thread may still be on its way down; a few tries let it reach the leaf.
        for _ in 0..<50 {
            let stack = try sampler.signalCapture(tid, unwinder: unwinder, timeout: .milliseconds(500))
            #expect(stack.unwinder == unwinder)
            #expect(stack.thread == tid)
            names = fixtureNames(in: stack)
            if names == expected { break }
            usleep(2000)
        }
        #expect(names == expected, "symbolized: \(names)")
    }

    @Test("a held-still snapshot of 8 threads captures all and releases them together",
          arguments: [Unwinder.framePointer, .libunwind])
    func heldSnapshot(unwinder: Unwinder) throws {
        let workers = (0..<8).map { i in
            TestThread(name: "sw-held-\(i)") { t in stallwatchFixtureCountLoop(t) }
        }
        let value = { (i: Int) in workers[i].counter.load(ordering: .relaxed) }
        defer { workers.forEach { $0.stopAndJoin() } }
        let tids = workers.compactMap { $0.tid }
        #expect(tids.count == 8)
        var before = [Int](repeating: 0, count: 8)
        var after = [Int](repeating: 0, count: 8)
        let snapshot = try sampler.snapshot(of: tids, unwinder: unwinder) {
            for i in 0..<8 { before[i] = value(i) }
            usleep(30_000) // while held, no worker may move
            for i in 0..<8 { after[i] = value(i) }
        }
        #expect(snapshot.heldTogether)
        #expect(snapshot.heldCount == 8)
        #expect(snapshot.stacks.count == 8)
        #expect(before == after, "a held thread advanced its counter")
        // Released: every worker moves again.
        let resumed = eventually { (0..<8).allSatisfy { value($0) > after[$0] } }
        #expect(resumed)
        for stack in snapshot.stacks {
            #expect(stack.frames.count >= 2)
            let names = Symbolizer.shared.symbolize(stack).compactMap(\.symbol)
            #expect(names.contains { $0.contains("stallwatchFixtureCountLoop") },
                    "stack of held worker: \(names.prefix(6))")
        }
    }

    @Test("a thread that exited gives threadGone")
    func exitedThread() throws {
        let worker = TestThread(name: "sw-exit") { _ in }
        let tid = try #require(worker.tid)
        worker.stopAndJoin()
        #expect(throws: SamplerError.threadGone(tid)) {
            _ = try sampler.signalCapture(tid, unwinder: .framePointer, timeout: .milliseconds(200))
        }
        #expect(throws: SamplerError.threadGone(tid)) {
            _ = try sampler.captureStack(of: tid)
        }
    }

    @Test("a thread that blocks the signal gives signalBlocked, within the deadline")
    func blockedSignal() throws {
        let worker = TestThread(name: "sw-blocks") { t in
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGPROF)
            pthread_sigmask(SIG_BLOCK, &set, nil)
            while !t.shouldStop {}
        }
        defer { worker.stopAndJoin() }
        let tid = try #require(worker.tid)
        #expect(eventually { (try? ThreadInfoProbe.sigblk(tid)).map { $0 & (1 << (UInt64(SIGPROF) - 1)) != 0 } ?? false })
        let clock = ContinuousClock()
        let start = clock.now
        #expect(throws: SamplerError.signalBlocked(tid, signal: SIGPROF)) {
            _ = try sampler.signalCapture(tid, unwinder: .framePointer, timeout: .milliseconds(300))
        }
        #expect(clock.now - start < .milliseconds(1300))
    }

    @Test("a thread that never answers gives timedOut within the deadline")
    func neverAnswers() throws {
        // A thread inside vfork waits uninterruptibly for its child: our signal stays pending.
        let worker = TestThread(name: "sw-vfork") { _ in _ = sw_test_vfork_sleep(1500) }
        defer { worker.stopAndJoin() }
        let tid = try #require(worker.tid)
        #expect(eventually { (try? ThreadInfoProbe.state(tid)) == "D" })
        let clock = ContinuousClock()
        let start = clock.now
        #expect(throws: SamplerError.timedOut(tid, after: .milliseconds(150))) {
            _ = try sampler.signalCapture(tid, unwinder: .framePointer, timeout: .milliseconds(150))
        }
        let took = clock.now - start
        #expect(took >= .milliseconds(150) && took < .milliseconds(1000), "took \(took)")
    }

    @Test("a thread blocked in read on a pipe is reported in that syscall without a signal")
    func blockedInRead() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        let readFD = fds[0], writeFD = fds[1]
        defer { close(readFD); close(writeFD) }
        let readResult = Atomic<Int>(-100)
        let worker = TestThread(name: "sw-reader") { _ in
            readResult.store(stallwatchFixtureBlockingRead(readFD), ordering: .releasing)
        }
        defer { worker.stopAndJoin() }
        let tid = try #require(worker.tid)
        #expect(eventually { (try? ThreadInfoProbe.syscallNumber(tid)) == 0 })
        let handledBefore = StackSampler.statistics.handled
        let stack = try sampler.captureStack(of: tid)
        #expect(StackSampler.statistics.handled == handledBefore, "the blocked thread was signalled")
        #expect(stack.unwinder == .syscallScan)
        let names = Symbolizer.shared.symbolize(stack).compactMap(\.symbol)
        #expect(names.contains { $0.contains("stallwatchFixtureBlockingRead") }, "\(names)")
        // The read was not interrupted: it returns the byte written now, not EINTR.
        var byte: UInt8 = 42
        #expect(write(writeFD, &byte, 1) == 1)
        #expect(eventually { readResult.load(ordering: .acquiring) != -100 })
        #expect(readResult.load(ordering: .acquiring) == 1)
        #expect(throws: SamplerError.notBlocked(ThreadID.current)) {
            _ = try sampler.captureBlockedStack(of: ThreadID.current)
        }
    }

    @Test("the calling thread cannot sample itself by signal")
    func selfCapture() {
        #expect(throws: SamplerError.cannotSampleCallingThread) {
            _ = try sampler.signalCapture(ThreadID.current, unwinder: .framePointer, timeout: .milliseconds(50))
        }
    }

    @Test("nonsense configuration is rejected with a message")
    func badConfiguration() {
        var c = StackSampler.Configuration()
        c.maxFrames = 0
        #expect(throws: SamplerError.self) { try StackSampler(configuration: c) }
        c = .init()
        c.timeout = .zero
        #expect(throws: SamplerError.self) { try StackSampler(configuration: c) }
        c = .init()
        c.signal = SIGSEGV
        #expect(throws: SamplerError.self) { try StackSampler(configuration: c) }
        c = .init()
        c.signal = SIGUSR2
        #expect(throws: SamplerError.anotherSignalInstalled(installed: SIGPROF, requested: SIGUSR2)) {
            try StackSampler(configuration: c)
        }
    }
}

@inline(never)
func stallwatchFixtureBlockingRead(_ fd: Int32) -> Int {
    var byte: UInt8 = 0
    let n = read(fd, &byte, 1)
    return n < 0 ? -Int(errno) : n
}

/// Reads /proc facts directly, so these tests do not depend on the thread-facts layer.
enum ThreadInfoProbe {
    static func sigblk(_ tid: ThreadID) throws -> UInt64 {
        var m: UInt64 = 0
        guard sw_thread_sigblk(tid.rawValue, &m) == 0 else { throw SamplerError.threadGone(tid) }
        return m
    }
    static func syscallNumber(_ tid: ThreadID) throws -> Int64 {
        var sc = sw_thread_syscall_t()
        guard sw_thread_syscall(tid.rawValue, &sc) == 0 else { throw SamplerError.threadGone(tid) }
        return sc.nr
    }
    static func state(_ tid: ThreadID) throws -> String {
        let text = try String(contentsOfFile: "/proc/self/task/\(tid.rawValue)/stat", encoding: .utf8)
        guard let close = text.lastIndex(of: ")") else { return "?" }
        return String(text[text.index(close, offsetBy: 2)])
    }
}

@Suite("Symbolization")
struct SymbolizationTests {
    @Test("frames carry module, offset, demangled name and the module's GNU build id")
    func buildIDs() throws {
        let address = UInt(bitPattern: dlsym(nil, "swift_demangle"))
        try #require(address != 0)
        let frame = Symbolizer.shared.symbolize(address)
        #expect(frame.module?.contains("libswiftCore") == true, "\(frame)")
        #expect(frame.symbol == "swift_demangle")
        let id = try #require(frame.buildID, "no build id for \(frame.module ?? "?")")
        // Compare with what the toolchain's own reader says.
        let out = Pipe()
        let readelf = Process()
        readelf.executableURL = URL(fileURLWithPath: "/usr/bin/readelf")
        readelf.arguments = ["-n", try #require(frame.module)]
        readelf.standardOutput = out
        try readelf.run()
        readelf.waitUntilExit()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(text.contains("Build ID: \(id)"), "readelf says: \(text.prefix(400))")
        #expect(Demangler.demangle("$sSi") == "Swift.Int")
    }
}

@Suite struct SamplerLimitsMatchPolicy {
    @Test("the policy's limits are the C sampler's")
    func limitsAgree() {
        #expect(WatchdogConfiguration.maximumFrames == Int(SW_MAX_FRAMES))
        #expect(WatchdogConfiguration.maximumRingCapacity == Int(SW_RING_MAX_CAPACITY))
    }
}
