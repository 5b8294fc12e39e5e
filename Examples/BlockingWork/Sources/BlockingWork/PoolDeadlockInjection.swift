import Foundation
#if canImport(Glibc)
import Glibc
#endif

// The classic cooperative-pool deadlock as a labelled stall: every worker of the pool waits on a
// semaphore that only another job would signal, so no job (not even the watchdog's ping of the
// pool) gets a worker. A plain thread signals it after the stall, as `stallwatch demo --scenario
// pool-deadlock` does. The matrix expects one `cooperative-pool` report listing the blocked jobs
// and one `cooperative-pool-job` report per blocked job.

/// The injection kind (`/inject/pooldeadlock?ms=N` on the servers that run routes on the pool).
public let poolDeadlockKind = "pooldeadlock"

/// The function each blocked job waits in, for the harness to find in the job's blamed stack.
public let poolDeadlockFunction = "waitForPoolGate"

/// How many workers the Swift runtime's cooperative pool has: one per active processor.
public var cooperativePoolWidth: Int { max(ProcessInfo.processInfo.activeProcessorCount, 1) }

/// Blocks every cooperative-pool worker for about `milliseconds`: as many jobs as the pool has
/// workers, at the priority of the pool's ping (`PingProbe.cooperativePool()`, `.medium`), each
/// waiting on one semaphore. The caller suspends meanwhile (it holds no worker) and resumes once
/// the jobs are done. The answer: `{"kind", "ms", "width", "jobs": [timedInjection's JSON per job]}`.
public func runPoolDeadlockInjection(milliseconds: Int) async -> String {
    let width = cooperativePoolWidth
    let gate = DispatchSemaphore(value: 0)
    let jobs = (0..<width).map { _ in
        Task(priority: .medium) {
            timedInjection(kind: poolDeadlockKind, milliseconds: milliseconds) { waitForPoolGate(gate) }
        }
    }
    // The signal no job can send comes from a plain thread, after the stall.
    Thread.detachNewThread {
        usleep(UInt32(clamping: milliseconds * 1000))
        for _ in 0..<width { gate.signal() }
    }
    var answers: [String] = []
    for job in jobs {
        answers.append(await job.value.trimmingCharacters(in: .whitespacesAndNewlines))
    }
    return "{\"kind\":\"\(poolDeadlockKind)\",\"ms\":\(milliseconds),\"width\":\(width),\"jobs\":["
        + answers.joined(separator: ",") + "]}\n"
}

/// `DispatchSemaphore.wait` on a pool worker, for a signal no other pool job can send.
@inline(never)
public func waitForPoolGate(_ gate: DispatchSemaphore) {
    gate.wait()
}
