import CSampler
import StallwatchPolicy
import StallwatchReport
import Synchronization

/// What an event loop that reports its ticks has told, written on the loop's thread after each
/// tick and read by the watchers that look at the loop instead of pinging it (``PingedLoopWatcher``):
/// its thread, its newest tick end, its longest tick since a watcher took it, its recent long ticks
/// (``LoopTicks``), and whether the probe's outstanding busy period is a look, which the loop's next
/// tick end answers. The loop reaches it through the probe it was given (``PingTarget/tickingLoop(_:)``),
/// so every watchdog that watches the probe reads the same record.
package final class LoopTickRecord: Sendable {
    /// The recent long ticks, with their exact bounds.
    let ticks = LoopTicks()
    private let reportsTicks = Atomic<Bool>(false)
    private let loopThread = Atomic<Int32>(0)
    private let lastTickEnd = Atomic<UInt64>(0)
    private let longestTick = Atomic<UInt64>(0)
    private let outstandingIsLook = Atomic<Bool>(false)

    package init() {}

    // MARK: - the loop's side (its thread only)

    /// Records one tick the loop finished (monotonic nanoseconds), and answers the look `probe` has
    /// outstanding when this tick ended after it.
    func record(startNanoseconds start: UInt64, endNanoseconds end: UInt64, of probe: PingProbe) {
        if !reportsTicks.load(ordering: .relaxed) {
            let tid = sw_current_tid()
            loopThread.store(tid, ordering: .relaxed)
            // Until a ping runs, the loop's own thread is the one a report samples.
            probe.noteThreadIfUnknown(ThreadID(rawValue: tid))
            reportsTicks.store(true, ordering: .releasing)
        }
        let posted = probe.postedNanoseconds
        ticks.record(start: start, end: end, posted: posted)
        if end >= start, end - start > longestTick.load(ordering: .relaxed) {
            longestTick.store(end - start, ordering: .relaxed)
        }
        lastTickEnd.store(end, ordering: .sequentiallyConsistent)
        if posted != 0, end >= posted, outstandingIsLook.load(ordering: .acquiring) {
            answerLook(posted: posted, ran: end, of: probe)
        }
    }

    // MARK: - a watcher's side

    /// A look found the loop busy between ticks at `now`: `probe`'s outstanding period from then on,
    /// answered by the loop's next tick end; nothing is posted.
    func beginLook(at now: UInt64, of probe: PingProbe) {
        outstandingIsLook.store(true, ordering: .sequentiallyConsistent)
        probe.markBusy(since: now)
        // The loop may have ended a tick between the two reads: then it was not busy after all.
        let after = lastTickEnd.load(ordering: .sequentiallyConsistent)
        if after >= now { answerLook(posted: now, ran: after, of: probe) }
    }

    /// Ends the busy period a look saw (posted at `posted`) at `ran`, the end of the loop's next
    /// tick: exactly once, whoever gets there first (the loop after its tick, or the watcher).
    func answerLook(posted: UInt64, ran: UInt64, of probe: PingProbe) {
        guard probe.claimOutstanding(postedAt: posted) else { return }
        outstandingIsLook.store(false, ordering: .relaxed)
        probe.answerClaimed(posted: posted, ran: ran)
    }

    /// Whether the probe's outstanding period is a look that saw the loop busy.
    var outstandingLook: Bool { outstandingIsLook.load(ordering: .acquiring) }

    /// The end of the newest tick the loop reported (monotonic ns), 0 before the first.
    var lastTickEndNanoseconds: UInt64 { lastTickEnd.load(ordering: .sequentiallyConsistent) }

    /// The loop's thread, once it reported a tick.
    var tickingThread: ThreadID? {
        let tid = loopThread.load(ordering: .relaxed)
        return tid != 0 && reportsTicks.load(ordering: .acquiring) ? ThreadID(rawValue: tid) : nil
    }

    /// Whether the loop has reported a tick yet.
    var isReportingTicks: Bool { reportsTicks.load(ordering: .relaxed) }

    /// The longest tick since the last call (0: none yet).
    func takeLongestTick() -> UInt64 {
        reportsTicks.load(ordering: .relaxed) ? longestTick.exchange(0, ordering: .relaxed) : 0
    }

    /// The exact bounds of the busy period the ping posted at `posted` measured, if the loop's
    /// ticks tell them; `answered` is when that ping ran.
    func tickBounds(posted: MonotonicInstant, answered: MonotonicInstant) -> (start: MonotonicInstant?, end: MonotonicInstant)? {
        guard reportsTicks.load(ordering: .relaxed) else { return nil }
        return ticks.bounds(posted: posted.nanoseconds, answered: answered.nanoseconds)
    }

    /// The newest long tick the loop reported, for a stall that began and ended between two looks:
    /// when a resting loop's wake goes unseen (see ``LoopRest``: where AIO poll is unavailable),
    /// a look dates the busy period from itself, too late. The tick tells its exact bounds.
    var lastEndedPeriod: (since: MonotonicInstant, end: MonotonicInstant)? {
        guard reportsTicks.load(ordering: .relaxed) else { return nil }
        return ticks.newestLong
    }

    /// Whether the loop reports ticks but has not yet reported the one that ran a ping answered at
    /// `answered` (then the stall's exact bounds are a moment away).
    func awaitsTick(after answered: MonotonicInstant) -> Bool {
        reportsTicks.load(ordering: .relaxed) && !ticks.reported(through: answered.nanoseconds)
    }
}
