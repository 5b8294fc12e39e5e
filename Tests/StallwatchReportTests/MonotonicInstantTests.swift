import StallwatchPolicy
import StallwatchReport
import Testing

@Suite struct MonotonicInstantTests {
    @Test func arithmeticRoundTrips() {
        let start = MonotonicInstant(nanoseconds: 5_000)
        #expect((start + .nanoseconds(250)).nanoseconds == 5_250)
        #expect((start - .nanoseconds(250)).nanoseconds == 4_750)
        #expect(start + .nanoseconds(250) - start == .nanoseconds(250))
        #expect(start - (start + .seconds(1)) == .seconds(-1))
    }

    @Test func saturatesInsteadOfTrapping() {
        #expect((MonotonicInstant(nanoseconds: 10) - .seconds(1)).nanoseconds == 0)
        #expect((MonotonicInstant(nanoseconds: .max - 1) + .seconds(1)).nanoseconds == .max)
    }
}
