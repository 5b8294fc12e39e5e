import CSampler
import Dispatch
import Glibc
import Synchronization
import Testing
@testable import Stallwatch

@inline(never)
func baselineFixtureFunction() -> Int { Int(getpid()) }

@inline(never)
func baselineFixtureSpinStep(_ x: UInt64) -> UInt64 { x &* 6364136223846793005 &+ 1442695040888963407 }

/// What the pool-job scans need of a worker before any job it runs can be dated, and of a frame to
/// tell jobs apart, without the symbol tables.
@Suite("Pool-job baselines", .serialized)
struct PoolBaselineTests {
    @Test("a worker running when first listed is signalled at once: a scan concludes something of it")
    func runningWorkerFirstListedGetsABaseline() throws {
        let sampler = try StackSampler()
        // A period no test reaches: only the first-sight rule can signal the worker.
        let watcher = PoolJobWatcher(sampler: sampler, symbolizer: .shared, inconclusiveSignalAfter: .seconds(600))
        try #require(watcher.isAvailable)
        let stop = Atomic<Bool>(false)
        let worker = Atomic<Int32>(0)
        // Outside any Swift job, on a pool worker, and on the CPU when the scan comes: the first
        // Vapor stall after start was dated up to threshold / 5 late on such a worker (no scan had
        // concluded anything of it).
        DispatchQueue.global().async {
            worker.store(ThreadID.current.rawValue, ordering: .releasing)
            var x: UInt64 = 1
            while !stop.load(ordering: .relaxed) { x = x &* 6364136223846793005 &+ 1 }
            if x == 0 { print("") }
        }
        defer { stop.store(true, ordering: .relaxed) }
        while worker.load(ordering: .acquiring) == 0 { usleep(1000) }
        usleep(20_000)
        _ = watcher.scan(now: MonotonicClock.now())
        let tid = ThreadID(rawValue: worker.load(ordering: .acquiring))
        #expect(watcher.hasBaseline(tid), "no scan concluded anything of the running worker \(tid)")
    }

    @Test("scans that find a job name it without loading the executable's symbol table")
    func scansLoadNoExecutableTable() async throws {
        let sampler = try StackSampler()
        let symbolizer = Symbolizer()
        let watcher = PoolJobWatcher(sampler: sampler, symbolizer: symbolizer, inconclusiveSignalAfter: .seconds(600))
        try #require(watcher.isAvailable)
        let stop = Atomic<Bool>(false)
        let worker = Atomic<Int32>(0)
        let job = Task.detached {
            worker.store(ThreadID.current.rawValue, ordering: .releasing)
            var x: UInt64 = 1
            while !stop.load(ordering: .relaxed) { x = baselineFixtureSpinStep(x) }
            return x
        }
        defer { stop.store(true, ordering: .relaxed) }
        while worker.load(ordering: .acquiring) == 0 { try await Task.sleep(for: .milliseconds(1)) }
        try await Task.sleep(for: .milliseconds(20))
        // Two scans: the first signals the worker at first sight, the second finds it busy.
        _ = watcher.scan(now: MonotonicClock.now())
        try await Task.sleep(for: .milliseconds(40))
        _ = watcher.scan(now: MonotonicClock.now())
        let loadedByScans = symbolizer.loadedModules
        stop.store(true, ordering: .relaxed)
        _ = await job.value
        #expect(watcher.anyInJob, "the spinning job was not identified")
        // Loaded for a report (100–200 ms for a large executable), never in a scan.
        let executable = try #require(symbolizer.symbolize(UInt(sw_main_entry())).module)
        #expect(!loadedByScans.contains(executable), "the scans loaded \(executable)'s symbol table")
    }

    @Test("a function's start from the unwind table, as the symbol table gives it, for every address inside it")
    func functionStartFromUnwindTable() throws {
        let address = unsafeBitCast(baselineFixtureFunction as @convention(c) () -> Int, to: UInt.self)
        let symbolized = try #require(Symbolizer.shared.symbolize(address).functionAddress)
        var start: UInt64 = 0
        #expect(sw_function_start(UInt64(address), &start) == 1)
        #expect(UInt(start) == symbolized)
        // Inside the function, not only at its entry (a return address lies there).
        #expect(sw_function_start(UInt64(address + 4), &start) == 1)
        #expect(UInt(start) == symbolized)
        // Outside any object: no answer rather than a wrong one.
        #expect(sw_function_start(16, &start) == 0)
        #expect(baselineFixtureFunction() > 0)
    }
}
