import StallwatchPolicy
import StallwatchReport
import Testing

/// A cause read from one snapshot can land in a moment that is not typical of the stall.
struct ObservedStatesTests {
    func evidence(_ state: Character, syscall: Int? = nil) -> ThreadEvidence {
        ThreadEvidence(state: state, syscall: syscall, cpuTimeDelta: .milliseconds(80), wallDelta: .milliseconds(600),
                       runQueueWaitDelta: .milliseconds(5), threadCount: 40, runnableThreadCount: 4, cores: 2)
    }

    @Test func aStorageWaitRunnableAtTheLastCheckIsStillDiskIO() {
        var seen = ObservedStates()
        for s: (Character, Int?) in [("D", 74), ("D", 74), ("R", nil), ("D", 74), ("R", nil)] {
            seen.note(evidence(s.0, syscall: s.1))
        }
        let last = evidence("R")
        #expect(CauseClassifier().classify(last).kind == .tooManyThreads)
        let cause = CauseClassifier().classify(last, observed: seen)
        #expect(cause.kind == .diskIO)
        #expect(cause.syscall == 74)
        #expect(cause.evidence.contains("state D in 3 of 5 checks"), "\(cause.evidence)")
    }

    @Test func aSleepRunnableAtTheLastCheckIsStillSleeping() {
        var seen = ObservedStates()
        for _ in 0..<4 { seen.note(evidence("S", syscall: 230)) }   // clock_nanosleep
        seen.note(evidence("R"))
        let last = evidence("R")
        #expect(CauseClassifier().classify(last).kind == .tooManyThreads)
        let cause = CauseClassifier().classify(last, observed: seen)
        #expect(cause.kind == .sleeping)
        #expect(cause.syscall == 230)
        #expect(cause.evidence.contains("asleep in a system call in 4 of 5 checks"), "\(cause.evidence)")
    }

    @Test func aThreadMostlyRunnableWithSomeSleepsStaysStarved() {
        var seen = ObservedStates()
        for s: Character in ["R", "S", "R", "R"] { seen.note(evidence(s, syscall: s == "S" ? 230 : nil)) }
        let last = evidence("R")
        #expect(CauseClassifier().classify(last, observed: seen) == CauseClassifier().classify(last))
    }

    @Test func aThreadMostlyRunnableStaysStarved() {
        var seen = ObservedStates()
        for s: Character in ["R", "R", "D", "R"] { seen.note(evidence(s, syscall: s == "D" ? 0 : nil)) }
        let last = evidence("R")
        #expect(CauseClassifier().classify(last, observed: seen) == CauseClassifier().classify(last))
    }

    @Test func otherCausesAreNotTouched() {
        var seen = ObservedStates()
        for _ in 0..<5 { seen.note(evidence("D", syscall: 74)) }
        let sleeping = evidence("S", syscall: 230)
        #expect(CauseClassifier().classify(sleeping, observed: seen) == CauseClassifier().classify(sleeping))
    }
}
