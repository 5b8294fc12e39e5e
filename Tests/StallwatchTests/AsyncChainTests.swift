import CSampler
import Glibc
import Synchronization
import StallwatchReport
import Testing
@testable import Stallwatch

/// What a fixture task shares with its test: its thread, and when to stop.
final class AsyncChainFixture: Sendable {
    let thread = Atomic<Int32>(0)
    let stop = Atomic<Bool>(false)
    /// The priority the task saw itself at (`TaskPriority.rawValue`), when a test records it.
    let priority = Atomic<UInt8>(0)
    let blocking: Bool
    init(blocking: Bool) { self.blocking = blocking }
}

@inline(never)
func asyncFixtureCompute(_ f: AsyncChainFixture) -> UInt64 {
    f.thread.store(ThreadID.current.rawValue, ordering: .releasing)
    var x: UInt64 = 1
    while !f.stop.load(ordering: .acquiring) {
        if f.blocking {
            usleep(20_000)
        } else {
            for _ in 0..<1000 { x = x &* 6364136223846793005 &+ 1442695040888963407 }
        }
    }
    return x
}

// Each level suspends for real before calling the next: its callers are then only in the task's
// async context chain.
@inline(never)
func asyncFixtureRepository(_ f: AsyncChainFixture) async -> UInt64 {
    try? await Task.sleep(for: .milliseconds(2))
    return asyncFixtureCompute(f) &+ 1
}

@inline(never)
func asyncFixtureService(_ f: AsyncChainFixture) async -> UInt64 {
    try? await Task.sleep(for: .milliseconds(2))
    return await asyncFixtureRepository(f) &+ 1
}

@inline(never)
func asyncFixtureRoute(_ f: AsyncChainFixture) async -> UInt64 {
    try? await Task.sleep(for: .milliseconds(2))
    return await asyncFixtureService(f) &+ 1
}

@inline(never)
func asyncFixtureLevel(_ depth: Int, _ f: AsyncChainFixture) async -> UInt64 {
    try? await Task.sleep(for: .milliseconds(1))
    if depth <= 1 { return asyncFixtureCompute(f) }
    return await asyncFixtureLevel(depth - 1, f) &+ 1
}

/// Two phases on one task: the service awaits the repository (which computes until `stop`), then
/// the archive (which computes until `second`): the same parent, a new callee in the same place.
final class TwoPhaseFixture: Sendable {
    let first = AsyncChainFixture(blocking: false)
    let second = Atomic<Bool>(false)
    let inSecond = Atomic<Bool>(false)
}

@inline(never)
func asyncFixtureArchiveCompute(_ f: TwoPhaseFixture) -> UInt64 {
    f.inSecond.store(true, ordering: .releasing)
    var x: UInt64 = 1
    while !f.second.load(ordering: .acquiring) {
        for _ in 0..<1000 { x = x &* 6364136223846793005 &+ 1442695040888963407 }
    }
    return x
}

@inline(never)
func asyncFixtureArchive(_ f: TwoPhaseFixture) async -> UInt64 {
    // No suspension: it runs on the thread the repository returned on, where the ring samples.
    asyncFixtureArchiveCompute(f) &+ 1
}

@inline(never)
func asyncFixtureTwoPhaseService(_ f: TwoPhaseFixture) async -> UInt64 {
    try? await Task.sleep(for: .milliseconds(2))
    let a = await asyncFixtureRepository(f.first)
    return await asyncFixtureArchive(f) &+ a
}

@Suite("Async call chains", .serialized)
struct AsyncChainTests {
    /// Runs `body` in a detached task until its thread is in `asyncFixtureCompute`, then hands the
    /// thread to `look`.
    func whileRunning<T>(_ fixture: AsyncChainFixture, _ body: @escaping @Sendable (AsyncChainFixture) async -> UInt64,
                         _ look: (ThreadID) throws -> T) async throws -> T {
        #expect(await AsyncChainLayout.learn() == .learnt)
        let task = Task.detached { await body(fixture) }
        defer { fixture.stop.store(true, ordering: .releasing) }
        let deadline = ContinuousClock.now + .seconds(10)
        while fixture.thread.load(ordering: .acquiring) == 0 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        let tid = fixture.thread.load(ordering: .acquiring)
        try #require(tid != 0, "the fixture never ran")
        try await Task.sleep(for: .milliseconds(30))
        let result = try look(ThreadID(rawValue: tid))
        fixture.stop.store(true, ordering: .releasing)
        _ = await task.value
        return result
    }

    /// The symbols of a stack, innermost first, with their async marks.
    func named(_ stack: CapturedStack) -> [(String, Bool)] {
        Symbolizer.shared.symbolize(stack).map { ($0.symbol ?? "?", $0.isAsync == true) }
    }

    /// Checks the order compute ← repository ← service ← route, the three marked async.
    func expectChain(_ stack: CapturedStack, _ context: String) {
        let frames = named(stack)
        let text = frames.enumerated().map { "#\($0) \($1.1 ? "[async] " : "")\($1.0)" }.joined(separator: "\n")
        func index(_ part: String) -> Int? { frames.firstIndex { $0.0.contains(part) } }
        let compute = index("asyncFixtureCompute"), repo = index("asyncFixtureRepository")
        let service = index("asyncFixtureService"), route = index("asyncFixtureRoute")
        #expect(compute != nil && repo != nil && service != nil && route != nil, "\(context):\n\(text)")
        guard let compute, let repo, let service, let route else { return }
        #expect(compute < repo && repo < service && service < route, "\(context):\n\(text)")
        #expect(frames[repo].1 && frames[service].1 && frames[route].1, "\(context): not marked async\n\(text)")
        #expect(!frames[repo].0.contains("partial function"), "\(context): \(frames[repo].0)")
        #expect(stack.asyncEnd == .whole, "\(context): \(String(describing: stack.asyncEnd))")
        // The callers read from contexts come right after the async function's own frame, and the
        // machine stack goes on below them to the runtime's job runner.
        if let chain = stack.asyncFrames {
            #expect(chain.lowerBound == repo + 1 && chain.contains(service) && chain.contains(route), "\(context): \(chain)\n\(text)")
            #expect(frames[chain.upperBound...].contains { $0.0.contains("swift_job_run") }, "\(context):\n\(text)")
        } else {
            Issue.record("\(context): no async frames\n\(text)")
        }
    }

    @Test("a running job's stack goes on through its async callers (signal handler)")
    func runningBySignal() async throws {
        let sampler = try StackSampler()
        let stack = try await whileRunning(AsyncChainFixture(blocking: false), asyncFixtureRoute) { tid in
            try sampler.signalCapture(tid, unwinder: .framePointer, timeout: .milliseconds(500))
        }
        expectChain(stack, "signal")
    }

    @Test("a blocked job's stack goes on through its async callers (no signal)")
    func blockedWithoutSignal() async throws {
        let sampler = try StackSampler()
        let stack = try await whileRunning(AsyncChainFixture(blocking: true), asyncFixtureRoute) { tid in
            // The fixture sleeps 20 ms at a time: ask until a read finds it inside the call.
            for _ in 0..<200 {
                if let s = try? sampler.captureBlockedStack(of: tid), s.frames.count > 3 { return s }
                usleep(1000)
            }
            throw SamplerError.busy
        }
        expectChain(stack, "blocked")
    }

    @Test("a running job's stack through its async callers, sampled by the kernel (perf)")
    func runningByPerf() async throws {
        let sampler = try StackSampler()
        let result: Result<CapturedStack, SamplerError> = try await whileRunning(AsyncChainFixture(blocking: false), asyncFixtureRoute) { tid in
            do throws(SamplerError) {
                return .success(try sampler.perfCapture(tid, timeout: .milliseconds(500)))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let stack): expectChain(stack, "perf")
        case .failure(let error) where error.isRefusal: print("perf events refused here: \(error)")
        case .failure(let error): Issue.record("perf capture failed: \(error)")
        }
    }

    @Test("each level of a deep chain is one async frame", arguments: [1, 3, 5])
    func depth(_ depth: Int) async throws {
        let sampler = try StackSampler()
        let stack = try await whileRunning(AsyncChainFixture(blocking: false), { await asyncFixtureLevel(depth, $0) }) { tid in
            try sampler.signalCapture(tid, unwinder: .framePointer, timeout: .milliseconds(500))
        }
        let frames = named(stack)
        let levels = frames.filter { $0.0.contains("asyncFixtureLevel") }
        #expect(levels.count == depth, "\(frames.map(\.0))")
        #expect(levels.allSatisfy { $0.1 }, "\(frames)")
        #expect(stack.asyncEnd == .whole)
    }

    /// A stack as a handler left it: five frames, the third read from a context, the chain stopped
    /// at `ctx` (not readable in place), and what the requester makes of it.
    func completed(from ctx: UInt64) -> (frames: [UInt64], at: Int, count: Int, end: Int32, left: UInt64) {
        var st = sw_stack_t()
        let handed: [UInt64] = [0x1000, 0x2000, 0x3001, 0x4000, 0x5000]
        withUnsafeMutableBytes(of: &st.frames) { raw in
            for (i, f) in handed.enumerated() { raw.storeBytes(of: f, toByteOffset: i * 8, as: UInt64.self) }
        }
        st.count = UInt32(handed.count)
        st.async_at = 2
        st.async_count = 1
        st.async_end = UInt8(SW_ASYNC_UNREADABLE)
        st.async_ctx = ctx
        sw_async_chain_complete(&st, 64)
        let frames = withUnsafeBytes(of: st.frames) { raw in
            (0..<Int(st.count)).map { raw.load(fromByteOffset: $0 * 8, as: UInt64.self) }
        }
        return (frames, Int(st.async_at), Int(st.async_count), Int32(st.async_end), st.async_ctx)
    }

    @Test("a chain the handler could not read is read on by the requester, after the frames it did read")
    func completedOffThread() throws {
        // Two contexts [parent, resume function], the resume functions real code.
        guard let runner = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_job_run"),
              let getpidCode = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "getpid") else {
            Issue.record("swift_job_run or getpid not found by dlsym")
            return
        }
        let a = UInt64(UInt(bitPattern: runner))
        let b = UInt64(UInt(bitPattern: getpidCode))
        let words = UnsafeMutablePointer<UInt64>.allocate(capacity: 4)
        defer { words.deallocate() }
        words[0] = UInt64(UInt(bitPattern: words + 2))
        words[1] = a
        words[2] = 0
        words[3] = b
        let whole = completed(from: UInt64(UInt(bitPattern: words)))
        #expect(whole.frames == [0x1000, 0x2000, 0x3001, a + 1, b + 1, 0x4000, 0x5000])
        #expect(whole.at == 2 && whole.count == 3 && whole.end == SW_ASYNC_WHOLE && whole.left == 0)
        // A parent that is not mapped: the chain keeps what it read and says where it stopped.
        words[2] = 0x8
        words[0] = 0x8
        let cut = completed(from: UInt64(UInt(bitPattern: words)))
        #expect(cut.frames == [0x1000, 0x2000, 0x3001, a + 1, 0x4000, 0x5000])
        #expect(cut.count == 2 && cut.end == SW_ASYNC_UNREADABLE && cut.left == 0x8)
        // A second word that is not code: not a context, nothing added.
        words[1] = 0x10
        let bad = completed(from: UInt64(UInt(bitPattern: words)))
        #expect(bad.frames == [0x1000, 0x2000, 0x3001, 0x4000, 0x5000] && bad.end == SW_ASYNC_BAD_RESUME)
    }

    @Test("the timer ring's samples of one job keep its chain, and a new callee in its place is seen at once")
    func ringKeepsUpWithTheChain() async throws {
        #expect(await AsyncChainLayout.learn() == .learnt)
        let f = TwoPhaseFixture()
        let task = Task.detached { await asyncFixtureTwoPhaseService(f) }
        defer { f.first.stop.store(true, ordering: .releasing); f.second.store(true, ordering: .releasing) }
        while f.first.thread.load(ordering: .acquiring) == 0 { try await Task.sleep(for: .milliseconds(5)) }
        let tid = ThreadID(rawValue: f.first.thread.load(ordering: .acquiring))
        let ring = try SamplingRing(sampler: try StackSampler(), thread: tid, interval: .milliseconds(5), capacity: 256)
        defer { ring.stop() }
        // Samples come with the thread's CPU time: wait for them rather than for a time a loaded
        // machine may not give it.
        func drain(until enough: ([CapturedStack]) -> Bool) async throws -> [CapturedStack] {
            var got: [CapturedStack] = []
            let deadline = ContinuousClock.now + .seconds(20)
            while !enough(got) && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
                got += ring.drain()
            }
            return got
        }
        let firstPhase = try await drain { $0.count >= 5 }
        f.first.stop.store(true, ordering: .releasing)
        while !f.inSecond.load(ordering: .acquiring) { try await Task.sleep(for: .milliseconds(2)) }
        let both = try await drain { got in
            got.count { s in named(s).contains { $0.0.contains("asyncFixtureArchiveCompute") } } >= 5
        }
        f.second.store(true, ordering: .releasing)
        _ = await task.value
        let secondPhase = both.filter { s in named(s).contains { $0.0.contains("asyncFixtureArchiveCompute") } }
        #expect(firstPhase.count >= 5, "\(firstPhase.count) samples")
        #expect(secondPhase.count >= 5, "\(secondPhase.count) samples in the archive")
        for s in firstPhase {
            let names = named(s).map(\.0)
            let repo = names.firstIndex { $0.contains("asyncFixtureRepository") }
            let service = names.firstIndex { $0.contains("asyncFixtureTwoPhaseService") }
            #expect(repo != nil && service != nil && repo! < service!, "\(names)")
        }
        for s in secondPhase {
            let names = named(s).map(\.0)
            #expect(!names.contains { $0.contains("asyncFixtureRepository") }, "a stale chain: \(names)")
            let archive = names.firstIndex { $0.contains("asyncFixtureArchive(") || $0.contains("asyncFixtureArchive ") }
            let service = names.firstIndex { $0.contains("asyncFixtureTwoPhaseService") }
            #expect(archive != nil && service != nil && archive! < service!, "\(names)")
        }
    }

    @Test("a partial function's demangled name becomes the async function's own")
    func names() {
        #expect(AsyncFunctionName.clean("(2) await resume partial function for App.route() async -> Swift.Int") == ("App.route() async -> Swift.Int", true))
        #expect(AsyncFunctionName.clean("(10) suspend resume partial function for closure #1 () async -> () in App") == ("closure #1 () async -> () in App", true))
        #expect(AsyncFunctionName.clean("App.route() async -> Swift.Int") == ("App.route() async -> Swift.Int", false))
        #expect(AsyncFunctionName.clean("(x) await resume partial function for f") == ("(x) await resume partial function for f", false))
        #expect(AsyncFunctionName.clean("(") == ("(", false))
    }

    @Test("a stack through a resumed async function says why its callers are missing, while chains are not walked")
    func missingCallersSaid() {
        var partial = ReportFrame(address: 0x1000, sampleCount: 3)
        partial.isAsync = true
        let plain = ReportFrame(address: 0x2000, sampleCount: 3)
        let why = AsyncChainLayout.missingCallers(in: [partial, plain], state: .failed("an async context is not readable"))
        #expect(why?.hasSuffix("could not be learnt: an async context is not readable") == true, "\(why ?? "nil")")
        #expect(AsyncChainLayout.missingCallers(in: [partial, plain], state: .unknown)?.contains("not learnt yet") == true)
        #expect(AsyncChainLayout.missingCallers(in: [partial, plain], state: .learnt) == nil)
        #expect(AsyncChainLayout.missingCallers(in: [plain], state: .failed("x")) == nil, "no async function: nothing is missing")
    }

    @Test("the handler names the task a job runs: its id, and the priority it runs at", arguments: [TaskPriority.low, .high])
    func taskNamed(priority: TaskPriority) async throws {
        #expect(await AsyncChainLayout.learn() == .learnt)
        let sampler = try StackSampler()
        let a = AsyncChainFixture(blocking: false), b = AsyncChainFixture(blocking: false)
        let body: @Sendable (AsyncChainFixture) async -> UInt64 = { f in
            f.priority.store(Task.currentPriority.rawValue, ordering: .releasing)
            return await asyncFixtureRoute(f)
        }
        let ta = Task.detached(priority: priority) { await body(a) }
        let tb = Task.detached(priority: priority) { await body(b) }
        defer { a.stop.store(true, ordering: .releasing); b.stop.store(true, ordering: .releasing) }
        let deadline = ContinuousClock.now + .seconds(10)
        while (a.thread.load(ordering: .acquiring) == 0 || b.thread.load(ordering: .acquiring) == 0) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        try #require(a.thread.load(ordering: .acquiring) != 0 && b.thread.load(ordering: .acquiring) != 0, "a fixture never ran")
        var seen: [UInt64] = []
        for f in [a, b] {
            let tid = ThreadID(rawValue: f.thread.load(ordering: .acquiring))
            let first = try sampler.signalCapture(tid, unwinder: .framePointer, timeout: .milliseconds(500))
            let again = try sampler.signalCapture(tid, unwinder: .framePointer, timeout: .milliseconds(500))
            let task = try #require(first.task, "no task read: \(named(first).map(\.0))")
            #expect(again.task?.id == task.id, "one job, one task")
            #expect(task.priority == f.priority.load(ordering: .acquiring), "sampled \(task.priority)")
            seen.append(task.id)
        }
        #expect(Set(seen).count == 2, "two tasks, two ids: \(seen)")
        // A sampling ring names the task in its first sample only (the read costs a sample ~1-2 µs).
        // 1024 entries: 4 s of the fixture's CPU before the first sample could be overwritten.
        let ring = try SamplingRing(sampler: sampler, thread: ThreadID(rawValue: a.thread.load(ordering: .acquiring)),
                                    interval: .milliseconds(4), capacity: 1024)
        var ringSamples: [CapturedStack] = []
        let ringDeadline = ContinuousClock.now + .seconds(20)
        while ringSamples.count < 3 && ContinuousClock.now < ringDeadline {
            try await Task.sleep(for: .milliseconds(20))
            ringSamples += ring.drain()
        }
        ring.stop()
        try #require(ringSamples.count >= 3, "\(ringSamples.count) ring samples")
        #expect(ringSamples[0].task?.id == seen[0], "first ring sample: \(String(describing: ringSamples[0].task))")
        #expect(ringSamples.dropFirst().allSatisfy { $0.task == nil })
        a.stop.store(true, ordering: .releasing)
        b.stop.store(true, ordering: .releasing)
        _ = await (ta.value, tb.value)
    }
}
