import StallwatchPolicy
import StallwatchReport

/// A stalled thread's lock wait, found from outside, before any stack is taken: cheap enough to
/// read each round a lock-waiting stall is looked at.
struct LockWaitFinding {
    /// From the stalled thread on: each wait and its holder (see ``LockWaitRead/chain(from:limit:)``).
    var hops: [LockWaitRead]
    /// The chain comes back to the stalled thread.
    var cycle: Bool
    /// For a thread whose evidence said `futex` but whose wait could not be read again (it left the
    /// wait meanwhile, or its `syscall` file could not be read): the address its evidence named.
    var unreadAddress: UInt64? = nil

    /// The stalled thread's futex wait now; `nil` when it is in none.
    static func find(_ thread: ThreadID) -> LockWaitFinding? {
        guard let first = LockWaitRead.read(thread) else { return nil }
        let chain = LockWaitRead.chain(from: first)
        return LockWaitFinding(hops: chain.hops, cycle: chain.cycle)
    }

    /// The deadlock's key in the ledger, when it is one.
    var deadlockKey: DeadlockLedger.Cycle? {
        cycle ? DeadlockLedger.Cycle(hops.map { (thread: $0.waiter, lock: $0.address) }) : nil
    }
}

extension ReportFactsGatherer {
    /// The report's facts of `finding`: each holder's stack captured now (a running holder by signal
    /// when `maySignal`, a blocked one from its kernel-reported registers), until `deadline`.
    func lockWaitFacts(_ finding: LockWaitFinding, maySignal: Bool, deadline: MonotonicInstant) -> LockWaitFacts? {
        guard let first = finding.hops.first else {
            return finding.unreadAddress.map {
                LockWaitFacts(lockAddress: $0, primitive: .unknown, ownership: .notKnown,
                              summary: "the lock's holder is not known: the thread was no longer in its futex wait when the lock was read (or its syscall file could not be read)")
            }
        }
        let address = first.address
        switch first.verdict {
        case .noOwner(let primitive, let why):
            return LockWaitFacts(lockAddress: address, primitive: primitive, ownership: .noOwner, summary: "no owner: \(why)")
        case .notKnown(let primitive, let why):
            return LockWaitFacts(lockAddress: address, primitive: primitive, ownership: .notKnown,
                                 summary: "the lock's holder is not known: \(why)")
        case .owner:
            break
        }
        var links: [LockWaitLink] = []
        for hop in finding.hops {
            guard let holder = hop.owner, case .owner(_, let primitive) = hop.verdict else { break }
            let stack = otherThread(holder, maySignal: maySignal, deadline: deadline, stalledSample: { _ in nil })
                ?? ThreadStack(thread: identity(holder), state: "?", frames: [])
            links.append(LockWaitLink(waiter: identity(hop.waiter), lockAddress: hop.address, primitive: primitive, holder: stack))
        }
        guard let head = links.first else { return nil }
        var summary = "waiting on a lock held by \(ReportBuilder.threadText(head.holder.thread)), \(ReportBuilder.whereIs(head.holder))"
        if first.ownerStable == false { summary += " (the lock changed hands as it was read: the holder named is the first read's)" }
        for link in links.dropFirst() {
            summary += "; \(ReportBuilder.threadText(link.waiter)) waits on a lock held by \(ReportBuilder.threadText(link.holder.thread))"
            if link.holder.thread.id != first.waiter.rawValue { summary += ", \(ReportBuilder.whereIs(link.holder))" }
        }
        if finding.cycle {
            summary = links.count == 1 && head.holder.thread.id == first.waiter.rawValue
                ? "deadlock: the thread waits on a lock it holds itself, \(ReportBuilder.whereIs(head.holder))"
                : "deadlock: " + summary
        } else if let last = finding.hops.last?.owner, finding.hops.contains(where: { $0.waiter == last }) {
            summary += ": a deadlock the stalled thread waits on without being part of it"
        }
        return LockWaitFacts(lockAddress: address, primitive: head.primitive, ownership: .held, holder: head.holder,
                             ownerStable: first.ownerStable, summary: summary,
                             chain: links.count > 1 ? links : nil, deadlock: finding.cycle)
    }
}

extension ReportBuilder {
    /// `cause` with what the lock wait found; a deadlock is its own cause.
    static func cause(_ cause: StallCause, with lock: LockWaitFacts) -> StallCause {
        var said = cause
        if lock.deadlock { said.kind = .deadlock }
        said.evidence += "; \(lock.summary)"
        return said
    }

    static func threadText(_ t: ThreadIdentity) -> String {
        t.name.isEmpty ? "thread \(t.id)" : "thread \(t.id) (\(t.name))"
    }

    /// "which is in f ← g ← h": the holder's named frames from its leaf, up to its first own frame
    /// (the application's code, not the system's) or three frames when none is its own.
    static func whereIs(_ s: ThreadStack) -> String {
        guard !s.frames.isEmpty else { return "whose stack could not be taken (state \(s.state))" }
        var named: [String] = []
        for frame in s.frames {
            guard let symbol = frame.symbol else { continue }
            named.append(symbol)
            if frame.resolvedOrigin == .application || named.count >= 4 { break }
        }
        if named.isEmpty { return "whose frames have no names (state \(s.state))" }
        var text = "which is in " + named.joined(separator: " ← ")
        if let call = s.syscall { text += " (blocked in \(BlockedSyscall.name(of: call)))" }
        else if s.state == "R" { text += " (running)" }
        return text
    }
}
