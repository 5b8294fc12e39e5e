import Foundation
import Glibc
import Synchronization
import Testing
@testable import Stallwatch

@Suite("Timer-driven sampling rings", .serialized)
struct SamplingRingTests {
    @Test("a busy thread is sampled on its CPU clock; its frames name the running functions")
    func busyThread() throws {
        let sampler = try StackSampler()
        let worker = TestThread(name: "sw-ring-busy") { t in _ = stallwatchFixtureAlpha(3, t) }
        defer { worker.stopAndJoin() }
        let tid = try #require(worker.tid)
        let ring = try SamplingRing(sampler: sampler, thread: tid, interval: .milliseconds(10), capacity: 64)
        usleep(400_000)
        ring.stop()
        let samples = ring.drain()
        // 400 ms of wall time on a 2-core VM: the spinning thread gets most of it.
        #expect(samples.count >= 10, "only \(samples.count) samples")
        #expect(samples.allSatisfy { $0.thread == tid && $0.unwinder == .framePointer })
        let named = samples.filter { fixtureNames(in: $0).first == "stallwatchFixtureLeafSpin" }
        #expect(named.count >= samples.count / 2)
        let taken = ring.taken
        usleep(50_000)
        #expect(ring.taken == taken, "a stopped ring kept sampling")
    }

    @Test("the ring's handler asks the kernel nothing for an ordinary thread's stack bounds")
    func noSystemCallForBounds() throws {
        let sampler = try StackSampler()
        let worker = TestThread(name: "sw-ring-nosys") { t in _ = stallwatchFixtureAlpha(3, t) }
        defer { worker.stopAndJoin() }
        let tid = try #require(worker.tid)
        let before = StackSampler.statistics.kernel_bound_checks
        let ring = try SamplingRing(sampler: sampler, thread: tid, interval: .milliseconds(4), capacity: 256)
        usleep(300_000)
        ring.stop()
        let samples = ring.drain()
        #expect(!samples.isEmpty)
        let broken = samples.filter { $0.walkEnd != .root }
        #expect(broken.isEmpty, "\(broken.map { "\($0.walkEnd?.name ?? "-"): " + Symbolizer.shared.symbolize($0).map { ($0.symbol ?? "?") + "@" + String($0.moduleOffset ?? 0, radix: 16) }.joined(separator: " <- ") })")
        // Bounded by the thread's own stack allocation (below its thread pointer): no mincore.
        #expect(StackSampler.statistics.kernel_bound_checks == before, "\(samples.count) samples")
    }

    @Test("a thread busy in varied library code (JSON, strings, sorting, libc): every sample walked to its root")
    func variedCodeWalksToTheRoot() throws {
        let sampler = try StackSampler()
        let worker = TestThread(name: "sw-ring-mixed") { t in
            while !t.shouldStop { t.counter.add(stallwatchFixtureMixedWork(), ordering: .relaxed) }
        }
        defer { worker.stopAndJoin() }
        let tid = try #require(worker.tid)
        let ring = try SamplingRing(sampler: sampler, thread: tid, interval: .milliseconds(4), capacity: 1024)
        usleep(1_000_000)
        ring.stop()
        let samples = ring.drain()
        #expect(samples.count >= 20)
        let broken = samples.filter { $0.walkEnd != .root }
        #expect(broken.isEmpty, "\(broken.count) of \(samples.count): \(broken.prefix(5).map { "\($0.walkEnd?.name ?? "-"): " + Symbolizer.shared.symbolize($0).prefix(4).map { $0.symbol ?? (($0.module ?? "?") + "+" + String($0.moduleOffset ?? 0, radix: 16)) }.joined(separator: " <- ") })")
    }

    @Test("a sleeping thread is not sampled and its sleep is not shortened")
    func sleepingThread() throws {
        let sampler = try StackSampler()
        let slept = Atomic<Int>(0)
        let worker = TestThread(name: "sw-ring-sleep") { _ in
            let clock = ContinuousClock()
            let start = clock.now
            usleep(300_000)
            slept.store(Int((clock.now - start) / .milliseconds(1)), ordering: .releasing)
        }
        defer { worker.stopAndJoin() }
        let tid = try #require(worker.tid)
        let ring = try SamplingRing(sampler: sampler, thread: tid, interval: .milliseconds(1))
        #expect(eventually { slept.load(ordering: .acquiring) > 0 })
        ring.stop()
        #expect(ring.drain().count <= 1)
        #expect(slept.load(ordering: .acquiring) >= 300)
    }

    @Test("a ring overwrites the oldest samples and counts what was lost")
    func wraps() throws {
        let sampler = try StackSampler()
        let worker = TestThread(name: "sw-ring-wrap") { t in _ = stallwatchFixtureLeafSpin(t) }
        defer { worker.stopAndJoin() }
        let tid = try #require(worker.tid)
        let ring = try SamplingRing(sampler: sampler, thread: tid, interval: .milliseconds(4), capacity: 4)
        #expect(eventually { ring.taken >= 12 })
        ring.stop()
        let samples = ring.drain()
        #expect(samples.count == 4)
        #expect(ring.lost + samples.count == Int(ring.taken))
    }

    @Test("bad arguments are rejected")
    func badArguments() throws {
        let sampler = try StackSampler()
        #expect(throws: SamplerError.self) {
            _ = try SamplingRing(sampler: sampler, thread: .current, interval: .zero)
        }
        #expect(throws: SamplerError.self) {
            _ = try SamplingRing(sampler: sampler, thread: .current, capacity: 0)
        }
        #expect(throws: SamplerError.threadGone(ThreadID(rawValue: 999_999))) {
            _ = try SamplingRing(sampler: sampler, thread: ThreadID(rawValue: 999_999))
        }
    }
}

/// Work that passes through Foundation, the Swift runtime and libc, with and without frame pointers.
@inline(never)
func stallwatchFixtureMixedWork() -> Int {
    struct Item: Codable { var name: String; var values: [Double] }
    let items = (0..<200).map { Item(name: "item \($0)", values: [Double($0), 1.5, 2.5]) }
    let data = (try? JSONEncoder().encode(items)) ?? Data()
    let decoded = (try? JSONDecoder().decode([Item].self, from: data)) ?? []
    var words = decoded.map(\.name).joined(separator: " ").split(separator: " ").map(String.init)
    words.sort()
    var numbers = (0..<2000).map { _ in UInt32.random(in: 0...UInt32.max) }
    numbers.withUnsafeMutableBufferPointer { buf in
        guard let base = buf.baseAddress else { return }
        qsort(base, buf.count, MemoryLayout<UInt32>.size) { a, b in
            let x = a!.load(as: UInt32.self), y = b!.load(as: UInt32.self)
            return x < y ? -1 : (x > y ? 1 : 0)
        }
    }
    let text = String(repeating: "abc", count: 500)
    return words.count &+ Int(numbers[0] & 1) &+ text.utf8.count &+ (text.range(of: "cab") == nil ? 0 : 1)
}

