import StallwatchPolicy
import StallwatchReport
import Testing

@Suite struct CPUPolicyTests {
    /// A reading of `cores` cores' worth of usage over one second.
    private func reading(usage: Double, periodMs: Int64 = 1000, cores: Int = 2, threads: [ThreadCPUTime] = []) -> CPUReading {
        CPUReading(
            processCPUTimeDelta: .milliseconds(periodMs) * usage, wallDelta: .milliseconds(periodMs),
            cores: cores, threads: threads)
    }

    @Test func processHighNamesTopThreeAboveFivePercent() throws {
        var policy = CPUPolicy(settings: CPUConfiguration())
        let threads = [
            ThreadCPUTime(threadID: 1, name: "a", cpuTimeDelta: .milliseconds(900)),
            ThreadCPUTime(threadID: 2, name: "b", cpuTimeDelta: .milliseconds(40)),
            ThreadCPUTime(threadID: 3, name: "c", cpuTimeDelta: .milliseconds(300)),
            ThreadCPUTime(threadID: 4, name: "d", cpuTimeDelta: .milliseconds(400)),
            ThreadCPUTime(threadID: 5, name: "e", cpuTimeDelta: .milliseconds(60)),
        ]
        let assessment = policy.ingest(reading(usage: 1.7, threads: threads))
        #expect(assessment.usage == 1.7)
        let event = try #require(assessment.events.first)
        guard case .processCPUHigh(let usage, let top) = event else {
            Issue.record("expected processCPUHigh, got \(event)")
            return
        }
        #expect(usage == 1.7)
        #expect(top.map(\.threadID) == [1, 4, 3])
        #expect(top.first?.fraction == 0.9)
    }

    @Test func processHighIsEdgeTriggeredAndBelowThresholdIsQuiet() {
        var policy = CPUPolicy(settings: CPUConfiguration(sustainedStartFraction: 1))
        #expect(policy.ingest(reading(usage: 1.6)).events.isEmpty)  // exactly 0.8 × 2 cores
        #expect(policy.ingest(reading(usage: 1.7)).events.count == 1)
        #expect(policy.ingest(reading(usage: 1.7)).events.isEmpty)
        #expect(policy.ingest(reading(usage: 0.2)).events.isEmpty)
        #expect(policy.ingest(reading(usage: 1.9)).events.count == 1)
    }

    @Test func sustainedFiresAtSixtySecondsThenCoolsDown() {
        var policy = CPUPolicy(settings: CPUConfiguration())
        for second in 1...59 {
            #expect(policy.ingest(reading(usage: 0.9)).events.isEmpty, "second \(second)")
        }
        #expect(policy.sustainedPhase == .tracking(cpu: .milliseconds(59 * 900), wall: .seconds(59)))
        let fired = policy.ingest(reading(usage: 0.9)).events
        #expect(fired.count == 1)
        if case .sustainedHigh(let average, let duration) = fired.first {
            #expect(abs(average - 0.9) < 1e-9)
            #expect(duration == .seconds(60))
        } else {
            Issue.record("expected sustainedHigh, got \(fired)")
        }
        // Cool-down: 60 s of readings do not start tracking, however high.
        for _ in 1...60 { _ = policy.ingest(reading(usage: 1.0)) }
        #expect(policy.sustainedPhase == .idle)
        _ = policy.ingest(reading(usage: 1.0))
        #expect(policy.sustainedPhase == .tracking(cpu: .seconds(1), wall: .seconds(1)))
    }

    @Test func startsOnlyAboveStartFraction() {
        var policy = CPUPolicy(settings: CPUConfiguration())
        _ = policy.ingest(reading(usage: 0.8))
        #expect(policy.sustainedPhase == .idle)
        _ = policy.ingest(reading(usage: 0.81))
        if case .tracking = policy.sustainedPhase {} else { Issue.record("expected tracking") }
    }

    @Test func abandonsWhenRunningAverageFallsBelowHalf() {
        var policy = CPUPolicy(settings: CPUConfiguration())
        _ = policy.ingest(reading(usage: 0.9))
        // Average (0.9 + 0.1) / 2 = 0.5 ≥ 0.4: keep tracking a dip.
        _ = policy.ingest(reading(usage: 0.1))
        if case .tracking = policy.sustainedPhase {} else { Issue.record("a short dip must not abandon") }
        // Average (0.9 + 0.1 + 0.0) / 3 ≈ 0.33 < 0.4: abandon.
        _ = policy.ingest(reading(usage: 0.0))
        #expect(policy.sustainedPhase == .idle)
    }

    @Test func ignoresNegativeZeroAndOverlongPeriods() {
        var policy = CPUPolicy(settings: CPUConfiguration())
        _ = policy.ingest(reading(usage: 0.9))
        let before = policy.sustainedPhase
        #expect(policy.ingest(CPUReading(processCPUTimeDelta: .seconds(1), wallDelta: .seconds(-1), cores: 2)).ignored)
        #expect(policy.ingest(CPUReading(processCPUTimeDelta: .seconds(1), wallDelta: .zero, cores: 2)).ignored)
        let long = policy.ingest(CPUReading(processCPUTimeDelta: .seconds(12), wallDelta: .milliseconds(5001), cores: 2))
        #expect(long.ignored)
        #expect(long.events.isEmpty)
        #expect(policy.sustainedPhase == before)
        #expect(!policy.ingest(reading(usage: 0.9, periodMs: 5000)).ignored)
    }
}
