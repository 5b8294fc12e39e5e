import CSampler
import StallwatchPolicy
import StallwatchReport

/// One thread's futex wait read now, from outside: the lock it waits on and who holds it, checked.
/// Read on the watchdog thread: the thread's `syscall` file, then the lock's memory through the
/// kernel (``sw_lock_words_read``), so a lock freed meanwhile is a failed read, never a fault.
struct LockWaitRead: Equatable {
    var waiter: ThreadID
    /// The futex word.
    var address: UInt64
    /// What the memory says, after the checks: an owner that is not a thread of this process is
    /// not named.
    var verdict: LockOwnerRule.Verdict
    /// Whether a second read of the lock, after the owner was checked, said the same; `nil` when
    /// no owner was read.
    var ownerStable: Bool?

    /// The named holder, if any.
    var owner: ThreadID? {
        if case .owner(let tid, _) = verdict { return ThreadID(rawValue: tid) }
        return nil
    }

    /// `waiter`'s futex wait now; `nil` when it is not in one (or is gone).
    static func read(_ waiter: ThreadID) -> LockWaitRead? {
        var call = sw_thread_syscall_t()
        guard sw_thread_syscall(waiter.rawValue, &call) == 0, Int(call.nr) == SyscallNumber.futex else { return nil }
        // The expected value is a 32-bit futex value in a 64-bit register.
        return judge(waiter: waiter, address: call.args.0, op: call.args.1, expected: call.args.2 & 0xffff_ffff)
    }

    /// Judges a wait whose call is known (``read(_:)``'s work after the `syscall` file).
    static func judge(waiter: ThreadID, address: UInt64, op: UInt64, expected: UInt64) -> LockWaitRead {
        let first = words(at: address)
        let verdict = LockOwnerRule.judge(op: op, expected: expected, words: first.words, bytes: first.bytes)
        guard case .owner(let tid, let primitive) = verdict else {
            return LockWaitRead(waiter: waiter, address: address, verdict: verdict, ownerStable: nil)
        }
        // The word could be stale or not a lock at all: the thread it names must be this process's.
        var stat = sw_thread_stat_t()
        guard tid > 0, sw_thread_stat(tid, &stat) == 0 else {
            return LockWaitRead(waiter: waiter, address: address,
                                verdict: .notKnown(primitive: primitive,
                                                   why: "the lock names thread \(tid), which is not a thread of this process"),
                                ownerStable: nil)
        }
        let second = words(at: address)
        let again = LockOwnerRule.judge(op: op, expected: expected, words: second.words, bytes: second.bytes)
        return LockWaitRead(waiter: waiter, address: address, verdict: verdict, ownerStable: again == verdict)
    }

    private static func words(at address: UInt64) -> (words: [UInt32], bytes: Int) {
        var raw = sw_lock_words_t()
        let bytes = sw_lock_words_read(address, &raw)
        let w = raw.words
        return ([w.0, w.1, w.2, w.3, w.4, w.5], Int(bytes))
    }

    /// The waits from `start` on: each hop's holder in turn, while the holder itself waits on a lock
    /// whose holder is named, up to `limit` hops. `cycle` is `true` when a holder is `start`: a
    /// deadlock. A holder met twice that is not `start` ends the chain (a cycle `start` only waits on).
    static func chain(from first: LockWaitRead, limit: Int = 8) -> (hops: [LockWaitRead], cycle: Bool) {
        var hops = [first]
        var seen: Set<ThreadID> = [first.waiter]
        var current = first
        while let holder = current.owner, hops.count < limit {
            if holder == first.waiter { return (hops, true) }
            guard seen.insert(holder).inserted, let next = read(holder), next.owner != nil else { break }
            hops.append(next)
            current = next
        }
        return (hops, hops.last?.owner == first.waiter)
    }
}
