import Foundation
import Stallwatch
import Synchronization

/// A real thread for tests: runs `body` on a new Thread and publishes its kernel tid.
final class TestThread: Sendable {
    let tidBox = Mutex<ThreadID?>(nil)
    let finished = Atomic<Bool>(false)
    let stop = Atomic<Bool>(false)
    /// A counter the body may bump, for tests that watch progress.
    let counter = Atomic<Int>(0)

    init(name: String = "sw-test", _ body: @escaping @Sendable (TestThread) -> Void) {
        let thread = Thread { [self] in
            tidBox.withLock { $0 = ThreadID.current }
            body(self)
            finished.store(true, ordering: .releasing)
        }
        thread.name = name
        thread.start()
        while tid == nil { usleep(500) }
    }

    var tid: ThreadID? { tidBox.withLock { $0 } }
    var shouldStop: Bool { stop.load(ordering: .acquiring) }

    /// Asks the body to stop and waits (bounded) until it has returned and the thread is gone.
    func stopAndJoin(timeout: Duration = .seconds(5)) {
        stop.store(true, ordering: .releasing)
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while !finished.load(ordering: .acquiring) && clock.now < deadline { usleep(1000) }
        // The kernel thread goes away shortly after the body returns.
        if let t = tid {
            while clock.now < deadline && FileManager.default.fileExists(atPath: "/proc/self/task/\(t.rawValue)") {
                usleep(1000)
            }
        }
    }
}

/// Polls `condition` until it holds or `timeout` passes.
func eventually(timeout: Duration = .seconds(3), _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}
