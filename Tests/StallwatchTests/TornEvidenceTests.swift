import CSampler
import Dispatch
import StallwatchReport
import Testing
@testable import Stallwatch

/// A stall's evidence reads its thread's `stat`, then its `syscall`: a thread that wakes between
/// the two reads (a lock-waiting loop as the lock comes free) reads asleep and running at once.
@Suite("Torn evidence reads")
struct TornEvidenceTests {
    func read(_ state: ThreadState, _ syscall: SyscallState) -> StalledThreadRead {
        StalledThreadRead(name: "t", state: state, lastCPU: 0, syscall: syscall)
    }

    @Test("asleep in stat but running in syscall is torn; every consistent pair is not")
    func tornPairs() {
        let futex = SyscallState.inSyscall(BlockedSyscall(number: 202, arguments: [0, 0, 0, 0, 0, 0], stackPointer: 1, programCounter: 2))
        #expect(read(.sleeping, .running).isTorn)
        #expect(read(.diskSleep, .running).isTorn)
        #expect(!read(.sleeping, futex).isTorn)
        #expect(!read(.diskSleep, futex).isTorn)
        #expect(!read(.running, .running).isTorn)
        #expect(!read(.running, futex).isTorn)
        #expect(!read(.sleeping, .blockedOutsideSyscall(sp: 1, pc: 2)).isTorn)
    }

    @Test("a thread blocked on a semaphore reads consistently: asleep, in futex")
    func blockedThreadIsNotTorn() throws {
        let gate = DispatchSemaphore(value: 0)
        let thread = TestThread { _ in gate.wait() }
        defer {
            gate.signal()
            thread.stopAndJoin()
        }
        let tid = try #require(thread.tid)
        let files = TaskFiles(tid)
        #expect(eventually { StalledThreadRead.read(files)?.syscall.blockedSyscall != nil })
        let read = try #require(StalledThreadRead.read(files))
        #expect(!read.isTorn)
        #expect(read.syscall.blockedSyscall?.number == SyscallNumber.futex)
    }
}
