import Dispatch

extension DispatchQueue {
    /// Runs `work` on this queue and waits for it, at most `timeout` (a queue held up by a blocked
    /// handler must not hold its caller for ever). Returns whether it finished in time.
    func runAndWait(atMost timeout: Duration, _ work: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        async {
            work()
            done.signal()
        }
        return done.wait(timeout: .now() + .nanoseconds(Int(clamping: timeout.clampedNanoseconds))) == .success
    }
}
