import Synchronization

/// Where the profile exporter's task waits for work, without polling: rung by the watchdog thread
/// (a report handed over), by shutdown, by cancellation, or at the end of a timed wait. A ring
/// with nobody waiting is kept for the next wait. One waiter at a time (the exporter's loop).
///
/// Not an `AsyncStream`: cancelling a task inside a stream's `next()` finishes the stream for
/// good, so a timed wait raced against one ended the exporter.
final class ExportDoorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    /// Wakes the waiter, or the next wait when nobody waits now. Safe from any thread.
    func ring() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            guard let waiter = s.waiter else {
                s.rung = true
                return nil
            }
            s.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns once rung (at once if rung since the last wait), or when the task is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.rung {
                        s.rung = false
                        return true
                    }
                    s.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            ring()
        }
    }

    /// The same, or at `end`, whichever comes first.
    func wait(until end: ContinuousClock.Instant) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                // Cancelled (the bell rang first): no ring, or the next wait would end at once.
                guard (try? await Task.sleep(until: end, clock: .continuous)) != nil else { return }
                ring()
            }
            await wait()
            group.cancelAll()
        }
    }
}
