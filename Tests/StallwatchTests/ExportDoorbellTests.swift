import Testing
@testable import Stallwatch

@Suite("Export doorbell")
struct ExportDoorbellTests {
    @Test("a ring before the wait is kept; a ring wakes a waiter; a timed wait ends at its end")
    func ringsAndTimes() async {
        let bell = ExportDoorbell()
        bell.ring()
        let clock = ContinuousClock()
        // Kept: returns at once.
        let kept = await clock.measure { await bell.wait() }
        #expect(kept < .seconds(1))

        // A waiter woken by a ring from another thread.
        let waiter = Task { await clock.measure { await bell.wait(until: .now + .seconds(30)) } }
        try? await Task.sleep(for: .milliseconds(50))
        bell.ring()
        #expect(await waiter.value < .seconds(30))

        // Nobody rings: the timed wait ends at its end, and leaves no ring behind.
        let timed = await clock.measure { await bell.wait(until: .now + .milliseconds(100)) }
        #expect(timed >= .milliseconds(100))
        let after = Task { await clock.measure { await bell.wait() } }
        try? await Task.sleep(for: .milliseconds(100))
        after.cancel()   // ends the wait: a cancelled waiter is woken
        #expect(await after.value >= .milliseconds(100))

        // Rung first: the timed wait ends early, and its timer does not ring the next wait.
        let early = Task { await clock.measure { await bell.wait(until: .now + .seconds(30)) } }
        try? await Task.sleep(for: .milliseconds(50))
        bell.ring()
        #expect(await early.value < .seconds(30))
        let next = Task { await clock.measure { await bell.wait(until: .now + .milliseconds(200)) } }
        #expect(await next.value >= .milliseconds(200))
    }
}
