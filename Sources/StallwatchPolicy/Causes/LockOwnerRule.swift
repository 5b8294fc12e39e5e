import StallwatchReport

/// Who holds the lock a thread waits on, judged from its futex call and the memory at the futex
/// address: pure, so every layout is tested without threads.
///
/// Only what glibc or the kernel records is taken as an owner. A futex word that is a counter or a
/// sequence (a semaphore, a condition variable, a plain `FUTEX_WAIT` on anything but a mutex) has no
/// owner, and a word that waits like a lock but does not look like one is "not known": never a guess.
package enum LockOwnerRule {
    /// The futex operation's command, without the private and clock flags.
    package static func command(_ op: UInt64) -> UInt64 { op & ~(privateFlag | clockRealtimeFlag) }

    /// What the rule found.
    package enum Verdict: Equatable, Sendable {
        /// The lock is held by thread `tid`, as recorded by `primitive`.
        case owner(tid: Int32, primitive: LockPrimitive)
        /// The primitive keeps no owner; `why` says what it is.
        case noOwner(primitive: LockPrimitive, why: String)
        /// An owner may exist but cannot be told; `why` says what was missing.
        case notKnown(primitive: LockPrimitive, why: String)
    }

    /// Judges a `futex(address, op, expected, …)` wait from `words` (the futex word, then the words
    /// after it: ``wordCount`` of them when `bytes` is `4 * wordCount`, only the first when 4).
    package static func judge(op: UInt64, expected: UInt64, words: [UInt32], bytes: Int) -> Verdict {
        let cmd = command(op)
        if cmd == lockPI || cmd == lockPI2 || cmd == trylockPI {
            // The kernel's PI protocol: the word is the owner's tid with the waiters/died bits
            // (Synchronization.Mutex, a PI pthread mutex, libdispatch's unfair lock).
            guard bytes >= 4, let word = words.first else {
                return .notKnown(primitive: .ownerInWord, why: "the lock word could not be read")
            }
            let tid = word & tidMask
            guard tid != 0 else { return .notKnown(primitive: .ownerInWord, why: "the lock word names no owner (just released)") }
            if word & ownerDied != 0 {
                return .notKnown(primitive: .ownerInWord, why: "the lock word says its owner (thread \(tid)) died holding it")
            }
            return .owner(tid: Int32(bitPattern: tid), primitive: .ownerInWord)
        }
        if cmd == waitRequeuePI {
            return .noOwner(primitive: .counter, why: "a condition variable (waiting for a signal, to requeue on its mutex)")
        }
        guard cmd == wait || cmd == waitBitset else {
            return .notKnown(primitive: .unknown, why: "futex operation \(cmd) is not a wait this reader knows")
        }
        guard bytes >= 4, let word = words.first else {
            return .notKnown(primitive: .unknown, why: "the futex word could not be read")
        }
        if bytes >= 4 * mutexWords, words.count >= mutexWords {
            let owner = words[ownerIndex], users = words[usersIndex], kind = words[kindIndex]
            if kind & ~knownKindBits == 0, kind & (priorityInherit | priorityProtect) == 0 {
                if kind & robust == 0 {
                    // glibc's lll_lock_wait: the word is 2 (locked, with waiters) and the waiter asked
                    // the kernel to sleep while it stays 2. `__owner` is set by whoever holds it;
                    // `__nusers` counts the holder.
                    if expected == 2 {
                        if word == 2, users >= 1, owner != 0 { return .owner(tid: Int32(bitPattern: owner), primitive: .pthreadMutex) }
                        return .notKnown(primitive: .pthreadMutex,
                                         why: "the mutex was changing hands as it was read (word \(word), owner \(owner))")
                    }
                } else if word & tidMask != 0, word & tidMask == owner, UInt64(word) == expected {
                    // A robust mutex: the word itself is the owner's tid (with the waiters bit).
                    if word & ownerDied != 0 {
                        return .notKnown(primitive: .pthreadMutex, why: "the robust mutex's owner (thread \(owner)) died holding it")
                    }
                    return .owner(tid: Int32(bitPattern: owner), primitive: .pthreadMutex)
                }
            }
        }
        if expected == 2 && word == 2 {
            return .notKnown(primitive: .unknown, why: "the futex word waits like a lock (2: locked, with waiters) but the memory around it is not a glibc mutex")
        }
        return .noOwner(primitive: .counter,
                        why: "a wait for the futex word to change from \(expected): a semaphore, condition variable or counter, which records no owner")
    }

    // Linux's futex ABI (`linux/futex.h`), the same on every architecture.
    static let wait: UInt64 = 0
    static let lockPI: UInt64 = 6
    static let trylockPI: UInt64 = 8
    static let waitBitset: UInt64 = 9
    static let waitRequeuePI: UInt64 = 11
    static let lockPI2: UInt64 = 13
    static let privateFlag: UInt64 = 128
    static let clockRealtimeFlag: UInt64 = 256
    static let tidMask: UInt32 = 0x3fff_ffff
    static let ownerDied: UInt32 = 0x4000_0000

    /// A glibc `struct __pthread_mutex_s` (x86_64 and aarch64 alike): `__lock`, `__count`,
    /// `__owner`, `__nusers`, `__kind` as 32-bit words from the futex word.
    package static let mutexWords = 5
    static let ownerIndex = 2
    static let usersIndex = 3
    static let kindIndex = 4
    // `__kind`: the type in the low two bits, then glibc's flags.
    static let robust: UInt32 = 16
    static let priorityInherit: UInt32 = 32
    static let priorityProtect: UInt32 = 64
    static let processShared: UInt32 = 128
    static let elision: UInt32 = 256
    static let noElision: UInt32 = 512
    static let knownKindBits: UInt32 = 3 | robust | priorityInherit | priorityProtect | processShared | elision | noElision
}
