import StallwatchPolicy
import StallwatchReport
import Testing

@Suite struct AnnealingTests {
    private let stackA = StackSignature(rootFirst: [1, 2, 3])
    private let stackB = StackSignature(rootFirst: [1, 2, 4])

    /// Offers the same stack every round and returns the rounds that were allowed.
    private func allowedRounds(_ schedule: inout AnnealingSchedule, _ signature: StackSignature, _ rounds: ClosedRange<Int>) -> [Int] {
        rounds.filter { schedule.admit(signature, round: $0) == .allowed }
    }

    @Test func fibonacciGapsExactly() {
        var schedule = AnnealingSchedule()
        let allowed = allowedRounds(&schedule, stackA, 0...40)
        let gaps = zip(allowed.dropFirst(), allowed).map { $0 - $1 }
        #expect(allowed == [0, 1, 2, 4, 7, 12, 20, 33])
        #expect(gaps == [1, 1, 2, 3, 5, 8, 13])
    }

    @Test func waitNamesTheNextAllowedRound() {
        var schedule = AnnealingSchedule()
        _ = allowedRounds(&schedule, stackA, 0...2)
        #expect(schedule.admit(stackA, round: 3) == .wait(nextAllowedRound: 4))
    }

    @Test func newStackResetsSchedule() {
        var schedule = AnnealingSchedule()
        _ = allowedRounds(&schedule, stackA, 0...10)
        #expect(schedule.admit(stackB, round: 11) == .allowed)
        #expect(allowedRounds(&schedule, stackB, 12...20) == [12, 13, 15, 18])
    }

    @Test func resetOnRecoveryAllowsSameStackAtOnce() {
        var schedule = AnnealingSchedule()
        _ = allowedRounds(&schedule, stackA, 0...10)
        #expect(schedule.admit(stackA, round: 11) != .allowed)
        schedule.reset()
        #expect(schedule.admit(stackA, round: 11) == .allowed)
    }
}

@Suite struct RollingLimiterTests {
    @Test func capsCountsAndRollsOver() {
        var limiter = RollingReportLimiter(capacity: 3, window: .seconds(60))
        #expect(limiter.admit(at: at(ms: 0)) == .admitted(suppressedBefore: 0))
        #expect(limiter.admit(at: at(ms: 10_000)) == .admitted(suppressedBefore: 0))
        #expect(limiter.admit(at: at(ms: 20_000)) == .admitted(suppressedBefore: 0))
        #expect(limiter.admit(at: at(ms: 30_000)) == .suppressed(suppressedSoFar: 1))
        #expect(limiter.admit(at: at(ms: 59_999)) == .suppressed(suppressedSoFar: 2))
        // The first report is now exactly one window old and no longer counts.
        #expect(limiter.admit(at: at(ms: 60_000)) == .admitted(suppressedBefore: 2))
        #expect(limiter.admit(at: at(ms: 60_001)) == .suppressed(suppressedSoFar: 3))
        #expect(limiter.suppressedTotal == 3)
        #expect(limiter.suppressedSinceLastAdmitted == 1)
    }
}

@Suite struct StallFilterTests {
    private let deep = StackSignature(rootFirst: [1, 2, 3])

    @Test func trivialStackIsFiltered() {
        var filter = StallFilter(configuration: configuration())
        #expect(filter.evaluate(StackSignature(rootFirst: [7]), round: 0, now: at(ms: 0)) == .filtered(.trivialStack))
        #expect(filter.evaluate(StackSignature(rootFirst: []), round: 1, now: at(ms: 0)) == .filtered(.trivialStack))
        // Two frames are enough, and the report says what was filtered before it.
        #expect(filter.evaluate(StackSignature(rootFirst: [7, 8]), round: 2, now: at(ms: 0)) == .report(ReportCounters(filteredSinceLastReport: 2)))
    }

    @Test func aShortStackWhoseWalkStoppedEarlyIsReportedNotTrivial() {
        var filter = StallFilter(configuration: configuration())
        // One frame, but the walk failed (code without unwind information): not trivial.
        #expect(filter.evaluate(StackSignature(rootFirst: [7]), round: 0, now: at(ms: 0), stackWhole: false).shouldReport)
        // The same frame from a walk that reached the thread's first frame is trivial.
        var other = StallFilter(configuration: configuration())
        #expect(other.evaluate(StackSignature(rootFirst: [7]), round: 0, now: at(ms: 0), stackWhole: true) == .filtered(.trivialStack))
    }

    @Test func samePCsDifferentButSameFunctionsAnneal() {
        var filter = StallFilter(configuration: configuration())
        let first = StackSignature(sample: StackSample(frames: [FrameKey(pc: 0x1010, functionStart: 0x1000), FrameKey(pc: 0x2222, functionStart: 0x2000)]))
        let moved = StackSignature(sample: StackSample(frames: [FrameKey(pc: 0x1044, functionStart: 0x1000), FrameKey(pc: 0x2223, functionStart: 0x2000)]))
        #expect(filter.evaluate(first, round: 0, now: at(ms: 0)).shouldReport)
        #expect(filter.evaluate(moved, round: 1, now: at(ms: 1000)).shouldReport)
        #expect(filter.evaluate(moved, round: 2, now: at(ms: 2000)).shouldReport)
        #expect(filter.evaluate(moved, round: 3, now: at(ms: 3000)) == .filtered(.annealing(nextAllowedRound: 4)))
    }

    @Test func stallEndResetsAnnealing() {
        var filter = StallFilter(configuration: configuration())
        for round in 0...2 { _ = filter.evaluate(deep, round: round, now: at(ms: 0)) }
        #expect(!filter.evaluate(deep, round: 3, now: at(ms: 0)).shouldReport)
        filter.stallEnded()
        #expect(filter.evaluate(deep, round: 3, now: at(ms: 0)) == .report(ReportCounters(filteredSinceLastReport: 1)))
    }

    @Test func rateCapSuppressesAndCountsAfterAnnealing() {
        let config = WatchdogConfiguration(reportCapPerWindow: 2, reportWindow: .seconds(100))
        var filter = StallFilter(configuration: config)
        let stacks = (10...15).map { StackSignature(rootFirst: [1, FrameKey(address: UInt64($0))]) }
        #expect(filter.evaluate(stacks[0], round: 0, now: at(ms: 0)).shouldReport)
        #expect(filter.evaluate(stacks[1], round: 1, now: at(ms: 1000)).shouldReport)
        #expect(filter.evaluate(stacks[2], round: 2, now: at(ms: 2000)) == .filtered(.rateLimited(suppressedSoFar: 1)))
        #expect(filter.evaluate(stacks[3], round: 3, now: at(ms: 3000)) == .filtered(.rateLimited(suppressedSoFar: 2)))
        // An annealed stack is filtered before the cap and not counted as suppressed.
        #expect(filter.evaluate(stacks[3], round: 3, now: at(ms: 3000)) == .filtered(.annealing(nextAllowedRound: 4)))
        #expect(filter.suppressedTotal == 2)
        // After the window rolls past the first report, one more fits; it carries the counts.
        #expect(filter.evaluate(stacks[4], round: 100, now: at(ms: 100_000)) == .report(ReportCounters(
            filteredSinceLastReport: 1, suppressedSinceLastReport: 2, suppressedTotal: 2)))
    }
}

@Suite struct ThreadCountPolicyTests {
    @Test func cutoffIsStrict() {
        let policy = ThreadCountPolicy(cutoff: 64)
        #expect(policy.evaluate(threadCount: 64) == .walkAllThreads)
        #expect(policy.evaluate(threadCount: 65) == .skipOtherThreads(count: 65))
    }
}
