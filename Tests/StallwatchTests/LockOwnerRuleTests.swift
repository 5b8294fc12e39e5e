import StallwatchPolicy
import StallwatchReport
import Testing

/// The rule on the layouts measured on glibc 2.36 / Swift 6.3.1 (x86_64): the futex call a waiter
/// makes and the words at its address, as `/proc/self/task/<tid>/syscall` and a read showed them.
@Suite("Lock owner rule")
struct LockOwnerRuleTests {
    static let holder: UInt32 = 13545

    @Test("glibc mutexes (normal, recursive, error-checking): FUTEX_WAIT_PRIVATE for 2, owner at +8")
    func pthreadMutex() {
        for kind: UInt32 in [0, 1, 2, 512] {
            let v = LockOwnerRule.judge(op: 0x80, expected: 2, words: [2, kind == 1 ? 1 : 0, Self.holder, 1, kind, 0], bytes: 24)
            #expect(v == .owner(tid: Int32(Self.holder), primitive: .pthreadMutex), "kind \(kind)")
        }
        // pthread_mutex_timedlock waits with FUTEX_WAIT_BITSET.
        #expect(LockOwnerRule.judge(op: 0x89, expected: 2, words: [2, 0, Self.holder, 1, 0, 0], bytes: 24)
            == .owner(tid: Int32(Self.holder), primitive: .pthreadMutex))
    }

    @Test("a mutex read as it changes hands, or with a foreign layout, names nobody")
    func notKnown() {
        guard case .notKnown(.pthreadMutex, _) = LockOwnerRule.judge(op: 0x80, expected: 2, words: [0, 0, 0, 0, 0, 0], bytes: 24) else {
            Issue.record("a released mutex named an owner"); return
        }
        guard case .notKnown(.unknown, _) = LockOwnerRule.judge(op: 0x80, expected: 2, words: [2, 7, 99, 5, 0xdead, 0], bytes: 24) else {
            Issue.record("a lock-like word with a foreign layout named an owner"); return
        }
        guard case .notKnown = LockOwnerRule.judge(op: 0x80, expected: 2, words: [2, 0, 0, 0, 0, 0], bytes: 4) else {
            Issue.record("a word without its neighbours named an owner"); return
        }
        guard case .notKnown = LockOwnerRule.judge(op: 0x80, expected: 2, words: [], bytes: 0) else {
            Issue.record("an unreadable word named an owner"); return
        }
    }

    @Test("PI futexes (Synchronization.Mutex, PI pthread mutex): FUTEX_LOCK_PI, the owner in the word")
    func ownerInWord() {
        #expect(LockOwnerRule.judge(op: 0x86, expected: 0, words: [0x8000_0000 | Self.holder, 0, 0, 0, 0, 0], bytes: 24)
            == .owner(tid: Int32(Self.holder), primitive: .ownerInWord))
        #expect(LockOwnerRule.judge(op: 0x86, expected: 0, words: [0x8000_0000 | 0x3a50], bytes: 4)
            == .owner(tid: 0x3a50, primitive: .ownerInWord))
        guard case .notKnown = LockOwnerRule.judge(op: 0x86, expected: 0, words: [0xC000_0000 | Self.holder], bytes: 4) else {
            Issue.record("a dead owner was named"); return
        }
    }

    @Test("robust mutex: the word is the owner's tid and the waiter expects it")
    func robustMutex() {
        let word = 0x8000_0000 | Self.holder
        #expect(LockOwnerRule.judge(op: 0x80, expected: UInt64(word), words: [word, 0, Self.holder, 1, 16, 0], bytes: 24)
            == .owner(tid: Int32(Self.holder), primitive: .pthreadMutex))
    }

    @Test("semaphores (sem_t, DispatchSemaphore) and condition variables: no owner")
    func counters() {
        // sem_wait: FUTEX_WAIT_BITSET_PRIVATE|FUTEX_CLOCK_REALTIME for 0 on the value word.
        guard case .noOwner(.counter, _) = LockOwnerRule.judge(op: 0x189, expected: 0, words: [0, 1, 0, 0, 0, 0], bytes: 24) else {
            Issue.record("a semaphore named an owner"); return
        }
        // pthread_cond_wait on __g_signals: the words after it are the next object's, maybe a tid-like number.
        guard case .noOwner = LockOwnerRule.judge(op: 0x189, expected: 0, words: [0, 0, Self.holder, 1, 0, 0], bytes: 24) else {
            Issue.record("a condition variable named an owner"); return
        }
        guard case .noOwner = LockOwnerRule.judge(op: 0x8b, expected: 0, words: [0, 0, 0, 0, 0, 0], bytes: 24) else {
            Issue.record("FUTEX_WAIT_REQUEUE_PI named an owner"); return
        }
    }
}
