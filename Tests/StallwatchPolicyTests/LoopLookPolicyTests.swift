import StallwatchReport
import StallwatchPolicy
import Testing

@Suite struct LoopLookPolicyTests {
    @Test func aTickEndedMeansProgressWhateverTheThreadDoesNow() {
        #expect(LoopLookPolicy.judge(tickEnded: true, thread: nil) == .ticking)
        #expect(LoopLookPolicy.judge(tickEnded: true, thread: .running) == .ticking)
    }

    @Test func epollWaitIsAsleep() {
        for nr in LoopLookPolicy.epollWaits {
            #expect(LoopLookPolicy.judge(tickEnded: false, thread: .inSyscall(nr)) == .asleep)
        }
        #expect(!LoopLookPolicy.epollWaits.isEmpty)
        #expect(LoopLookPolicy.judge(tickEnded: false, thread: .unmovedSinceAsleep) == .asleep)
    }

    @Test func anyOtherWaitOrRunningIsBusy() {
        // nanosleep (35 on x86_64, 101 on arm64), futex (202 / 98), read (0 / 63): work between ticks.
        for nr: Int64 in [0, 35, 63, 98, 101, 202] where !LoopLookPolicy.epollWaits.contains(nr) {
            #expect(LoopLookPolicy.judge(tickEnded: false, thread: .inSyscall(nr)) == .busy)
        }
        #expect(LoopLookPolicy.judge(tickEnded: false, thread: .running) == .busy)
        #expect(LoopLookPolicy.judge(tickEnded: false, thread: .blockedOutsideSyscall) == .busy)
    }

    @Test func anUnreadableThreadStartsNothing() {
        #expect(LoopLookPolicy.judge(tickEnded: false, thread: .unreadable) == .unknown)
        #expect(LoopLookPolicy.judge(tickEnded: false, thread: nil) == .unknown)
    }
}
