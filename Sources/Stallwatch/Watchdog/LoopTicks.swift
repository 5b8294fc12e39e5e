import StallwatchPolicy
import StallwatchReport
import Synchronization

/// The recent work units ("ticks") a loop reported itself, with their exact start and end, so the
/// watchdog can correct a ping-timed stall when it is over: the ping only says the loop was busy
/// from some instant before the ping was posted until the ping ran; a tick record says when the
/// stalled tick began and ended. Written by the loop after each tick, read by the watchdog.
///
/// Only ticks of at least ``longTick`` are kept (a few; a busy loop runs thousands of short ones a
/// second), plus the start of the first tick after the outstanding ping was posted: work a loop
/// does between its ticks (SwiftNIO's channel handlers run outside them) ends there.
package final class LoopTicks: Sendable {
    /// Ticks at least this long are remembered.
    static let longTick: UInt64 = 2_000_000
    private struct State {
        var long: [(start: UInt64, end: UInt64)] = []
        var firstStartAfter: (posted: UInt64, start: UInt64)?
        var lastEnd: UInt64 = 0
    }
    private let state = Mutex(State())

    package init() {}

    /// Records one finished tick (monotonic nanoseconds); `posted` is the outstanding ping's post
    /// instant, or 0.
    func record(start: UInt64, end: UInt64, posted: UInt64) {
        guard end >= start else { return }
        state.withLock { s in
            s.lastEnd = max(s.lastEnd, end)
            if end - start >= Self.longTick {
                if s.long.count == 8 { s.long.removeFirst() }
                s.long.append((start, end))
            }
            if posted != 0, start >= posted, s.firstStartAfter?.posted != posted {
                s.firstStartAfter = (posted, start)
            }
        }
    }

    /// Whether the loop has reported a tick that ended at or after `instant`: the tick that ran a
    /// ping answered then is reported only once it is over, a moment after the answer.
    func reported(through instant: UInt64) -> Bool {
        state.withLock { $0.lastEnd >= instant }
    }

    /// The newest long tick (at least ``longTick``): its exact start and end. A tick longer than
    /// the threshold that no look saw begin is a stall all the same (``LoopTickRecord/lastEndedPeriod``).
    var newestLong: (since: MonotonicInstant, end: MonotonicInstant)? {
        state.withLock { s in
            s.long.last.map { (MonotonicInstant(nanoseconds: $0.start), MonotonicInstant(nanoseconds: $0.end)) }
        }
    }

    /// The stall's exact bounds, when the ticks tell them, for a busy period the watchdog saw from
    /// `posted` (its ping's post instant) until `answered` (when the ping ran).
    /// - A long tick that overlaps the time from `posted` to `answered` is the stalled tick: its
    ///   start (after `posted` when the ping was queued just before the tick began), and its end
    ///   (or `answered`, if the ping ran inside that very tick).
    /// - Otherwise the loop was stuck between ticks, and the first tick after `posted` began when
    ///   that ended: only the end is known.
    func bounds(posted: UInt64, answered: UInt64) -> (start: MonotonicInstant?, end: MonotonicInstant)? {
        state.withLock { s in
            if let tick = s.long.last(where: { $0.start <= answered && $0.end >= posted }) {
                return (MonotonicInstant(nanoseconds: tick.start), MonotonicInstant(nanoseconds: min(tick.end, answered)))
            }
            if let after = s.firstStartAfter, after.posted == posted, after.start <= answered {
                return (nil, MonotonicInstant(nanoseconds: after.start))
            }
            return nil
        }
    }
}
