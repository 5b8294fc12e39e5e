import StallwatchPolicy
import Testing

@Suite struct CauseClassifierTests {
    private let classifier = CauseClassifier(configuration: configuration())

    private func evidence(
        _ state: Character, syscall: Int? = nil, fd: FDKind? = nil,
        cpuMs: Int64 = 0, wallMs: Int64 = 2000, runQueueMs: Int64? = nil, threads: Int = 10
    ) -> ThreadEvidence {
        ThreadEvidence(
            state: state, syscall: syscall, fdKind: fd, cpuTimeDelta: .milliseconds(cpuMs),
            wallDelta: .milliseconds(wallMs), runQueueWaitDelta: runQueueMs.map { .milliseconds($0) },
            threadCount: threads)
    }

    @Test func cpuBound() {
        let cause = classifier.classify(evidence("R", cpuMs: 1950))
        #expect(cause.kind == .cpuBound)
        #expect(cause.evidence.contains("1950.0 ms of 2000.0 ms"))
        #expect(cause.evidence.contains("98 %"))
        #expect(classifier.classify(evidence("R", cpuMs: 1000)).kind == .cpuBound)
    }

    @Test func starvedWhenRunnableWithoutCPU() {
        let cause = classifier.classify(evidence("R", cpuMs: 100, runQueueMs: 1800))
        #expect(cause.kind == .starved)
        #expect(cause.evidence.contains("waited 1800.0 ms for a CPU"))
        #expect(classifier.classify(evidence("R", cpuMs: 999)).kind == .starved)
    }

    @Test func lockWait() {
        let cause = classifier.classify(evidence("S", syscall: SyscallNumber.futex))
        #expect(cause.kind == .lockWait)
        #expect(cause.syscall == 202)
        #expect(cause.syscallName == "futex")
        #expect(cause.evidence.contains("futex"))
    }

    @Test(arguments: [0, 1, 17, 18, 19, 20, 42, 43, 44, 45, 46, 47, 288])
    func networkIOOnSockets(syscall: Int) {
        #expect(classifier.classify(evidence("S", syscall: syscall, fd: .socket)).kind == .networkIO)
    }

    @Test(arguments: [7, 23, 232, 270, 271, 281, 441])
    func readinessWaitsAreNetworkIO(syscall: Int) {
        #expect(classifier.classify(evidence("S", syscall: syscall, fd: .epoll)).kind == .networkIO)
        #expect(classifier.classify(evidence("S", syscall: syscall)).kind == .networkIO)
    }

    @Test(arguments: [0, 1, 17, 18, 19, 20])
    func fileIOIsDiskIO(syscall: Int) {
        let cause = classifier.classify(evidence("S", syscall: syscall, fd: .file))
        #expect(cause.kind == .diskIO)
        #expect(cause.evidence.contains("file descriptor"))
    }

    @Test func syncsOpensAndStateDAreDiskIO() {
        #expect(classifier.classify(evidence("S", syscall: 74)).kind == .diskIO)
        #expect(classifier.classify(evidence("S", syscall: 75)).kind == .diskIO)
        #expect(classifier.classify(evidence("S", syscall: 257)).kind == .diskIO)
        let stateD = classifier.classify(evidence("D", syscall: SyscallNumber.read, fd: .pipe))
        #expect(stateD.kind == .diskIO)
        #expect(stateD.evidence.contains("state D"))
    }

    @Test func sleeping() {
        #expect(classifier.classify(evidence("S", syscall: 35)).kind == .sleeping)
        #expect(classifier.classify(evidence("S", syscall: 230)).kind == .sleeping)
    }

    @Test func threadCountAloneIsNoCause() {
        // A CPU spin in a process with 106 threads is CPU-bound; a lock wait with 500 is a lock wait.
        #expect(classifier.classify(evidence("R", cpuMs: 1950, threads: 106)).kind == .cpuBound)
        #expect(classifier.classify(evidence("S", syscall: 202, threads: 500)).kind == .lockWait)
        var spin = evidence("R", cpuMs: 1950, threads: 106)
        spin.runnableThreadCount = 100
        spin.cores = 2
        #expect(classifier.classify(spin).kind == .cpuBound, "a thread that gets its CPU is not starved")
    }

    @Test func tooManyThreadsNeedsAStarvedThreadAndMoreRunnableThanCores() {
        var starved = evidence("R", cpuMs: 100, runQueueMs: 1800, threads: 300)
        starved.cores = 2
        starved.runnableThreadCount = 40
        let cause = classifier.classify(starved)
        #expect(cause.kind == .tooManyThreads)
        #expect(cause.evidence.contains("40 of the process's 300 threads are runnable on 2 cores"), "\(cause.evidence)")
        starved.runnableThreadCount = 2
        #expect(classifier.classify(starved).kind == .starved, "runnable threads ≤ cores: starved by something else")
        starved.runnableThreadCount = nil
        #expect(classifier.classify(starved).kind == .starved)
    }

    @Test func otherSyscallsAreBlockedInSyscall() {
        let pipeRead = classifier.classify(evidence("S", syscall: 0, fd: .pipe))
        #expect(pipeRead.kind == .blockedInSyscall)
        #expect(pipeRead.syscall == 0)
        #expect(pipeRead.evidence.contains("read on a pipe descriptor"))
        let wait4 = classifier.classify(evidence("S", syscall: 61))
        #expect(wait4.kind == .blockedInSyscall)
        #expect(wait4.syscallName == nil)
        #expect(wait4.evidence.contains("syscall 61"))
    }

    @Test func unknownWithoutEvidence() {
        #expect(classifier.classify(evidence("S")).kind == .unknown)
        #expect(classifier.classify(evidence("T", cpuMs: 10)).kind == .unknown)
        // Sleeping now but busy during the window: it was computing.
        #expect(classifier.classify(evidence("S", cpuMs: 1800)).kind == .cpuBound)
        // An empty window must not divide by zero.
        #expect(classifier.classify(evidence("R", cpuMs: 0, wallMs: 0)).kind == .starved)
    }
}
