import StallwatchPolicy
import StallwatchReport
import Testing

private typealias S = SyscallNumber

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
        #expect(!cause.evidence.contains("in progress"))
        #expect(classifier.classify(evidence("R", cpuMs: 999)).kind == .starved)
    }

    /// schedstat counts a wait when it ends: a thread queued through the whole window shows none.
    @Test func waitInProgressIsSaidNotCounted() {
        let cause = classifier.classify(evidence("R", cpuMs: 0, runQueueMs: 0))
        #expect(cause.kind == .starved)
        #expect(cause.evidence.contains("waited 0.0 ms for a CPU (a wait is counted once it ends: the one in progress is not in it)"),
                "\(cause.evidence)")
    }

    @Test func lockWait() {
        let cause = classifier.classify(evidence("S", syscall: SyscallNumber.futex))
        #expect(cause.kind == .lockWait)
        #expect(cause.syscall == SyscallNumber.futex)
        #expect(cause.syscallName == "futex")
        #expect(cause.evidence.contains("futex"))
    }

    // By name: the numbers are the architecture's (SyscallNumber's per-architecture tables).
    @Test(arguments: [S.read, S.write, S.pread64, S.pwrite64, S.readv, S.writev, S.connect, S.accept, S.sendto,
                      S.recvfrom, S.sendmsg, S.recvmsg, S.accept4])
    func networkIOOnSockets(syscall: Int) {
        #expect(classifier.classify(evidence("S", syscall: syscall, fd: .socket)).kind == .networkIO)
    }

    @Test(arguments: [S.poll, S.select, S.epollWait, S.pselect6, S.ppoll, S.epollPwait, S.epollPwait2]
        .filter { $0 != S.unavailable })
    func readinessWaitsAreNetworkIO(syscall: Int) {
        #expect(classifier.classify(evidence("S", syscall: syscall, fd: .epoll)).kind == .networkIO)
        #expect(classifier.classify(evidence("S", syscall: syscall)).kind == .networkIO)
    }

    @Test(arguments: [S.read, S.write, S.pread64, S.pwrite64, S.readv, S.writev])
    func fileIOIsDiskIO(syscall: Int) {
        let cause = classifier.classify(evidence("S", syscall: syscall, fd: .file))
        #expect(cause.kind == .diskIO)
        #expect(cause.evidence.contains("file descriptor"))
    }

    @Test func syncsOpensAndStateDAreDiskIO() {
        #expect(classifier.classify(evidence("S", syscall: S.fsync)).kind == .diskIO)
        #expect(classifier.classify(evidence("S", syscall: S.fdatasync)).kind == .diskIO)
        #expect(classifier.classify(evidence("S", syscall: S.openat)).kind == .diskIO)
        let stateD = classifier.classify(evidence("D", syscall: SyscallNumber.read, fd: .pipe))
        #expect(stateD.kind == .diskIO)
        #expect(stateD.evidence.contains("state D"))
    }

    @Test func sleeping() {
        #expect(classifier.classify(evidence("S", syscall: S.nanosleep)).kind == .sleeping)
        #expect(classifier.classify(evidence("S", syscall: S.clockNanosleep)).kind == .sleeping)
    }

    @Test func threadCountAloneIsNoCause() {
        // A CPU spin in a process with 106 threads is CPU-bound; a lock wait with 500 is a lock wait.
        #expect(classifier.classify(evidence("R", cpuMs: 1950, threads: 106)).kind == .cpuBound)
        #expect(classifier.classify(evidence("S", syscall: S.futex, threads: 500)).kind == .lockWait)
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
        let pipeRead = classifier.classify(evidence("S", syscall: S.read, fd: .pipe))
        #expect(pipeRead.kind == .blockedInSyscall)
        #expect(pipeRead.syscall == S.read)
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

    @Test func syscallTablesAreTheArchitecturesOwn() {
        #if arch(x86_64)
        #expect(S.futex == 202 && S.read == 0 && S.nanosleep == 35 && S.epollWait == 232)
        #elseif arch(arm64)
        // 202 is accept here, not futex; poll, select and epoll_wait do not exist.
        #expect(S.futex == 98 && S.read == 63 && S.nanosleep == 101 && S.accept == 202)
        #expect(S.poll == S.unavailable && S.select == S.unavailable && S.epollWait == S.unavailable)
        #endif
        #expect(S.name(of: S.futex) == "futex")
        #expect(S.name(of: S.unavailable) == nil)
        #expect(classifier.classify(evidence("S", syscall: S.accept)).kind == .networkIO)
    }
}
