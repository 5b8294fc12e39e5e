import CBlockingWork
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The tid a held lock's holder publishes before it lets its waiter go on: written before the
/// semaphore is signalled, read after it is waited on.
private final class HolderTid: @unchecked Sendable {
    var value: Int32 = 0
}

/// Names the calling thread as `/proc` shows it (what a report names the holder by).
private func nameThisThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY)
    guard fd >= 0 else { return }
    _ = name.withCString { write(fd, $0, strlen($0)) }
    close(fd)
}

/// Computes for `milliseconds` while its caller holds a lock: the function a report must name as
/// the holder's.
@inline(never)
public func computeWhileHoldingLock(milliseconds: Int) {
    blockOnCPU(milliseconds: milliseconds)
}

/// Waits on an `NSLock` that another thread, named `sw-lock-holder`, holds while it computes in
/// ``computeWhileHoldingLock(milliseconds:)`` for `milliseconds`. Returns the holder's tid.
@inline(never)
public func blockOnHeldLock(milliseconds: Int) -> Int32 {
    let lock = NSLock()
    let locked = DispatchSemaphore(value: 0)
    let tid = HolderTid()
    let holder = Thread {
        nameThisThread("sw-lock-holder")
        lock.lock()
        tid.value = bw_gettid()
        locked.signal()
        computeWhileHoldingLock(milliseconds: milliseconds)
        lock.unlock()
    }
    holder.start()
    locked.wait()
    lock.lock()
    lock.unlock()
    return tid.value
}

/// The held-lock injection's answer: `timedInjection`'s JSON with the holder's tid added.
func heldLockInjection(milliseconds: Int) -> String {
    var holder: Int32 = 0
    let answer = timedInjection(kind: "heldmutex", milliseconds: milliseconds) {
        holder = blockOnHeldLock(milliseconds: milliseconds)
    }
    guard let close = answer.lastIndex(of: "}") else { return answer }
    return String(answer[..<close]) + ",\"holderTid\":\(holder),\"holderFunction\":\"computeWhileHoldingLock\"}\n"
}
