import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Blocks the calling thread in `usleep`.
@inline(never)
public func blockInSleep(milliseconds: Int) {
    usleep(UInt32(clamping: milliseconds * 1000))
}

/// Computes for `milliseconds` without ever suspending or blocking.
@inline(never)
public func blockOnCPU(milliseconds: Int) {
    let end = ContinuousClock.now + .milliseconds(milliseconds)
    var x: UInt64 = 1
    while ContinuousClock.now < end {
        for _ in 0..<10_000 { x = x &* 6364136223846793005 &+ 1442695040888963407 }
    }
    if x == 42 { print("") }
}

/// Waits on a mutex another thread holds for `milliseconds`.
@inline(never)
public func blockOnLock(milliseconds: Int) {
    let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    pthread_mutex_init(mutex, nil)
    defer { mutex.deallocate() }
    let locked = DispatchSemaphore(value: 0)
    let address = UInt(bitPattern: mutex) // a raw pointer is not Sendable; its address is
    let holder = Thread {
        guard let mutex = UnsafeMutablePointer<pthread_mutex_t>(bitPattern: address) else { return }
        pthread_mutex_lock(mutex)
        locked.signal()
        usleep(UInt32(clamping: milliseconds * 1000))
        pthread_mutex_unlock(mutex)
    }
    holder.start()
    locked.wait()
    pthread_mutex_lock(mutex)
    pthread_mutex_unlock(mutex)
}

/// A blocking `recv` on a socket whose peer answers after `milliseconds`.
@inline(never)
public func blockOnSocketRead(milliseconds: Int) {
    var pair: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { return }
    defer { close(pair[0]); close(pair[1]) }
    let peer = pair[1]
    let answer = Thread {
        usleep(UInt32(clamping: milliseconds * 1000))
        _ = write(peer, "x", 1)
    }
    answer.start()
    var byte: UInt8 = 0
    _ = recv(pair[0], &byte, 1, 0)
}
