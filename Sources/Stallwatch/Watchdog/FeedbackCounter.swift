import CSampler
import StallwatchPolicy
import StallwatchReport
import Synchronization

/// Counts how often one key comes round within a single busy period of its loop, and reports the
/// loop when the count passes a threshold: a loop that never blocks but never settles (a task that
/// re-enqueues itself, one key handled over and over), which no stall threshold sees. The server
/// analogue of LayoutLoopHunter's count of layouts per run-loop iteration.
///
/// Get one per key once, from ``HeartbeatProbe/counter(for:threshold:)``, and keep it: ``hit()``
/// takes no lock and allocates nothing. Crossing the threshold captures the calling thread's stack
/// (the call that crossed it) and hands it to the watchdog, which reports a `feedbackLoop` with the
/// key, the count and the busy period's duration so far; at most once per key per busy period.
///
/// ```swift
/// let renders = probe.counter(for: "render:/users")
/// probe.busy()
/// for update in updates { renders.hit(); render(update) }
/// probe.idle()
/// ```
public final class FeedbackCounter: Sendable {
    /// What is counted, as reports name it.
    public let key: String
    /// The count that produces a report (at least 2).
    public let threshold: Int
    private unowned let probe: HeartbeatProbe
    // The busy period the count belongs to, and the count: one writer (the loop's thread).
    private let period = Atomic<UInt64>(0)
    private let count = Atomic<Int>(0)

    init(key: String, threshold: Int, probe: HeartbeatProbe) {
        self.key = key
        self.threshold = threshold
        self.probe = probe
    }

    /// One more occurrence of the key in the loop's current busy period.
    @inline(__always)
    public func hit() {
        let current = probe.busyPeriod
        var n = count.load(ordering: .relaxed)
        if period.load(ordering: .relaxed) != current {
            period.store(current, ordering: .relaxed)
            n = 0
        }
        n += 1
        count.store(n, ordering: .relaxed)
        if n == threshold { crossed(count: n) }
    }

    /// The count in the current busy period (0 once a new one began).
    public var currentCount: Int {
        period.load(ordering: .relaxed) == probe.busyPeriod ? count.load(ordering: .relaxed) : 0
    }

    @inline(never)
    private func crossed(count n: Int) {
        var raw = sw_stack_t()
        let stack: CapturedStack? = sw_capture_self(&raw, 128) == 0 ? withUnsafePointer(to: &raw) { CapturedStack($0) } : nil
        probe.recordFeedback(FeedbackCrossing(key: key, count: n, threshold: threshold,
                                              at: MonotonicClock.now(), stack: stack,
                                              busySince: probe.busySince, period: probe.busyPeriod))
    }
}

/// A key that passed its threshold, waiting for the watchdog's next round.
struct FeedbackCrossing: Sendable {
    let key: String
    let count: Int
    let threshold: Int
    let at: MonotonicInstant
    let stack: CapturedStack?
    /// The busy period the crossing happened in, read on the loop's own thread: the watchdog may
    /// take the crossing only after that period ended (it is not woken for it).
    let busySince: MonotonicInstant?
    let period: UInt64
}
