import CSampler
import CSamplerTestSupport
import Glibc
import Testing

/// The watchdog's set of resting loops: a loop's wake reaches the watchdog even when the loop's
/// thread took its own events before the watchdog waited (what an epoll set nesting the loop's
/// descriptor loses: epoll re-checks the descriptor when it delivers).
@Suite("Resting loops' set", .serialized)
struct LoopRestSetTests {
    /// A loop's epoll descriptor with an eventfd in it, as SwiftNIO registers its own (edge-triggered).
    private func makeLoop() throws -> (epfd: Int32, eventfd: Int32) {
        var efd: Int32 = -1
        let epfd = sw_test_loop_epoll(&efd)
        try #require(epfd >= 0, "\(epfd)")
        return (epfd, efd)
    }

    /// Another thread's `execute` wakes the loop, whose thread takes its events (and reads its
    /// eventfd) before the watchdog waits: returns how many events it took.
    @discardableResult
    private func wakeLoopTakingItsEvents(_ loop: (epfd: Int32, eventfd: Int32)) -> Int32 {
        sw_test_loop_kick(loop.eventfd)
        return sw_test_loop_take_events(loop.epfd, loop.eventfd)
    }

    /// The tokens the set reports within `timeout`: waits again after each return (another test's
    /// pool enqueue or watchdog bumps the wake-up generation, which ends a wait early), until
    /// `until` tokens came (nil: the whole timeout).
    private func tokens(_ set: OpaquePointer, within timeout: Duration, until wanted: Int? = nil, room: Int = 4) -> [UInt64] {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var seen: [UInt64] = []
        var fired = [UInt64](repeating: 0, count: room)
        while clock.now < deadline, wanted.map({ seen.count < $0 }) ?? true {
            let left = (deadline - clock.now).components
            let ns = left.seconds * 1_000_000_000 + left.attoseconds / 1_000_000_000
            let n = sw_loop_rest_wait(set, sw_pool_wake_generation(), max(ns, 1), &fired, Int32(room))
            if n < 0 { break }
            seen += fired.prefix(Int(n))
        }
        return seen
    }

    /// A new set; `keepingWakes`: one whose loops are watched by AIO poll requests (else the test
    /// would check the nested-epoll fallback's behaviour, which loses such wakes by design).
    private func openSet(keepingWakes: Bool = true) throws -> OpaquePointer {
        var error: Int32 = 0
        let set = try #require(sw_loop_rest_open(&error) as OpaquePointer?, "open: \(error)")
        if keepingWakes, sw_loop_rest_keeps_wakes(set) != 1 {
            defer { sw_loop_rest_close(set) }
            Issue.record("AIO poll unavailable here: \(sw_loop_rest_aio_error(set))")
            throw CancellationError()
        }
        return set
    }

    @Test("a wake the loop took first is still reported, with the loop's token")
    func wakeTakenFirstIsKept() throws {
        let set = try openSet()
        defer { sw_loop_rest_close(set) }
        let loop = try makeLoop()
        defer { close(loop.epfd); close(loop.eventfd) }
        #expect(sw_loop_rest_arm(set, loop.epfd, 42) == 0)
        // Nothing happened yet: a short wait reports nothing.
        #expect(tokens(set, within: .milliseconds(20)).isEmpty)
        #expect(wakeLoopTakingItsEvents(loop) == 1)
        #expect(tokens(set, within: .seconds(1), until: 1) == [42])
        // One event per arm: nothing more until it is armed again.
        #expect(tokens(set, within: .milliseconds(20)).isEmpty)
        #expect(sw_loop_rest_disarm(set, loop.epfd) == -ENOENT)
    }

    @Test("a disarmed loop's later event is not reported; re-armed, its next one is")
    func disarmAndRearm() throws {
        let set = try openSet()
        defer { sw_loop_rest_close(set) }
        let loop = try makeLoop()
        defer { close(loop.epfd); close(loop.eventfd) }
        #expect(sw_loop_rest_arm(set, loop.epfd, 7) == 0)
        #expect(sw_loop_rest_disarm(set, loop.epfd) == 0)
        wakeLoopTakingItsEvents(loop)
        #expect(tokens(set, within: .milliseconds(50)).isEmpty)
        #expect(sw_loop_rest_arm(set, loop.epfd, 8) == 0)
        wakeLoopTakingItsEvents(loop)
        #expect(tokens(set, within: .seconds(1), until: 1) == [8])
    }

    @Test("more loops woken than the caller has room for: the rest come with the next wait")
    func moreWakesThanRoom() throws {
        let set = try openSet()
        defer { sw_loop_rest_close(set) }
        var loops: [(epfd: Int32, eventfd: Int32)] = []
        defer { for l in loops { close(l.epfd); close(l.eventfd) } }
        for i in 0..<5 {
            let loop = try makeLoop()
            loops.append(loop)
            #expect(sw_loop_rest_arm(set, loop.epfd, UInt64(100 + i)) == 0)
        }
        for loop in loops {
            wakeLoopTakingItsEvents(loop)
        }
        #expect(tokens(set, within: .seconds(2), until: 5, room: 2).sorted() == [100, 101, 102, 103, 104])
    }

    @Test("a loop closed and another opened under its descriptor number: the new one's wake is reported")
    func descriptorNumberReused() throws {
        let set = try openSet()
        defer { sw_loop_rest_close(set) }
        let old = try makeLoop()
        #expect(sw_loop_rest_arm(set, old.epfd, 1) == 0)
        #expect(sw_loop_rest_disarm(set, old.epfd) == 0)
        close(old.epfd)
        close(old.eventfd)
        let new = try makeLoop()
        defer { close(new.epfd); close(new.eventfd) }
        #expect(new.epfd == old.epfd, "the kernel gives the lowest free number")
        #expect(sw_loop_rest_arm(set, new.epfd, 2) == 0)
        wakeLoopTakingItsEvents(new)
        #expect(tokens(set, within: .seconds(1), until: 1) == [2])
        // Released: a disarmed loop's request is cancelled; its event wakes nothing.
        #expect(sw_loop_rest_disarm(set, new.epfd) == -ENOENT)
        #expect(sw_loop_rest_arm(set, new.epfd, 2) == 0)
        #expect(sw_loop_rest_disarm(set, new.epfd) == 0)
        sw_loop_rest_release_idle(set)
        sw_test_loop_kick(new.eventfd)
        #expect(tokens(set, within: .milliseconds(50)).isEmpty)
    }

    @Test("the set's own descriptors and a closed one cannot be armed")
    func badDescriptors() throws {
        let set = try openSet(keepingWakes: false)
        defer { sw_loop_rest_close(set) }
        let loop = try makeLoop()
        close(loop.epfd)
        close(loop.eventfd)
        #expect(sw_loop_rest_arm(set, loop.epfd, 1) == -EBADF)
        #expect(sw_loop_rest_arm(set, -1, 1) < 0)
    }
}
