import CSampler
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import StallwatchReport

/// Lets a watchdog sleep while every event loop it looks at sleeps, instead of looking at each one
/// every 40 ms (25 wake-ups a second for an idle service).
///
/// A loop that reports its ticks (SwiftNIO with ``PingProbe/recordTick(startNanoseconds:endNanoseconds:)``)
/// and that a look found asleep in `epoll_wait` can only wake through its epoll descriptor: I/O,
/// another thread's `execute` (an eventfd) and its scheduled tasks (a timerfd) all arrive there.
/// So that descriptor is watched instead (`sw_loop_rest.h`): an AIO poll request on it, whose
/// completion the kernel queues and counts for the watchdog, wakes it when the loop gets an event.
/// The loop was asleep until then, so a stall it begins is dated from there as a look every 40 ms
/// would date it. (Nesting the descriptor in the watchdog's epoll set, the fallback where AIO
/// cannot be set up, loses the wake when the loop's thread takes its events first: epoll re-checks
/// the descriptor when it delivers. The late look, and the loop's report of its long tick, then
/// tell the stall later.)
///
/// Loops rest only together, when nothing else needs the 40 ms rounds (no other loop pinged or
/// busy, the pool at rest or not watched), and only after enough looks in a row found them all
/// asleep: the number needed doubles after a rest shorter than ``shortRest`` (up to
/// ``maxLooksBeforeRest``), so a loop given work every few ms costs no more wake-ups than looks
/// would. Where descriptors are nested in epoll (no AIO), a look every 0.9 × threshold (the late
/// look) still sees a loop that a lost wake left busy. Where the set cannot be made or a descriptor cannot be watched, loops are looked at as
/// before, and one log line says why.
final class LoopRest {
    /// A rest shorter than this doubles the looks the next one needs.
    static let shortRest = Duration.milliseconds(500)
    /// At most this many looks in a row must find every loop asleep before they rest.
    static let maxLooksBeforeRest = 32

    private let logger: Logger
    private var restSet: OpaquePointer?
    private var resting: [(token: UInt64, fd: Int32, loop: PingedLoopWatcher)] = []
    // This round's looked-at loops found asleep, and whether any other was not; kept between
    // rounds with their capacity (a round allocates nothing).
    private var candidates: [(loop: PingedLoopWatcher, fd: Int32)] = []
    private var othersAwake = false
    private var fired = [UInt64](repeating: 0, count: 8)
    private var armFailureLogged = false
    private var restBegan: MonotonicInstant?
    private var quietLooks = 0
    private var looksNeeded = 1
    /// When the loops resting now are looked at again even without an event.
    private(set) var lateLookAt: MonotonicInstant?

    /// Opens the watchdog's epoll set (its sleep, ``wait(seen:timeout:)``); where it cannot be
    /// made, one log line says so and the watchdog sleeps on the pool's generation word instead.
    init(logger: Logger) {
        self.logger = logger
        var error: Int32 = 0
        if let set = sw_loop_rest_open(&error) {
            restSet = set
            if sw_loop_rest_keeps_wakes(set) == 0 {
                logger.notice("AIO poll cannot be used: a resting event loop's wake can be missed, and its stall is then reported late, from the loop's tick",
                              metadata: ["error": "\(-sw_loop_rest_aio_error(set))"])
            }
        } else {
            logger.info("event loops cannot rest and the pool's timer is not used; loops are looked at every period",
                        metadata: ["error": "\(-error)"])
        }
    }

    /// Whether the watchdog sleeps in its epoll set (``wait(seen:timeout:)``): then the pool's
    /// enqueue may wake it through the pool timer, and loops may rest.
    var hasSet: Bool { restSet != nil }

    /// Whether some loops rest.
    var isResting: Bool { !resting.isEmpty }

    /// Whether a resting loop's wake is kept until the watchdog reads it (AIO poll): then no late
    /// look is needed, and the watchdog may sleep without a period (``IdleSleep``).
    var keepsWakes: Bool { restSet.map { sw_loop_rest_keeps_wakes($0) != 0 } ?? false }

    /// Adds a descriptor whose readiness ends the watchdog's sleep (``IdleSleep``'s CPU timer):
    /// 0 or -errno.
    func addWaker(_ fd: Int32) -> Int32 {
        guard let restSet else { return -ENOSYS }
        return sw_loop_rest_add_waker(restSet, fd)
    }

    /// Closes the set; no loop rests any more.
    func close() {
        endAll()
        if let restSet { sw_loop_rest_close(restSet) }
        restSet = nil
    }

    /// Sleeps like `sw_pool_wake_wait`, and until a resting loop gets an event; the rests of the
    /// loops that got one are over, from `now` on (see ``PingedLoopWatcher/endRest(wokenAt:)``).
    func wait(seen: UInt32, timeout: Duration) {
        guard let set = restSet else { return }
        let count = fired.withUnsafeMutableBufferPointer {
            sw_loop_rest_wait(set, seen, timeout.clampedNanoseconds, $0.baseAddress, Int32($0.count))
        }
        guard count >= 0 else {
            // An epoll set that cannot be waited on would return at once, every round: say why,
            // and sleep on the generation word from now on (no loop rests, the pool wakes at once).
            logger.error("the watchdog's epoll set failed; event loops are looked at every period again",
                         metadata: ["error": "\(-count)"])
            close()
            return
        }
        guard count > 0 else { return }
        let now = MonotonicClock.now()
        for token in fired.prefix(Int(count)) {
            guard let index = resting.firstIndex(where: { $0.token == token }) else { continue }
            let entry = resting.remove(at: index)
            _ = sw_loop_rest_disarm(set, entry.fd)
            entry.loop.endRest(wokenAt: now.nanoseconds)
        }
        if resting.isEmpty { rested(until: now) }
    }

    /// Ends every rest without an event (the late look, a change of loops, `stop()`): the loops
    /// are looked at to learn their state.
    func endAll() {
        guard let set = restSet else { return }
        for entry in resting {
            // ENOENT or EBADF only when the loop closed its descriptor: nothing left to undo.
            _ = sw_loop_rest_disarm(set, entry.fd)
            entry.loop.endRest(wokenAt: nil)
        }
        resting.removeAll(keepingCapacity: true)
        lateLookAt = nil
        // A late look that finds them asleep again rests them at once.
        quietLooks = looksNeeded
    }

    /// The watched loops changed: every rest ends, and the descriptors of loops that may be gone
    /// are no longer watched.
    func loopsChanged() {
        endAll()
        if let restSet { sw_loop_rest_release_idle(restSet) }
    }

    /// A round with looks begins (``lookedAt(_:)`` and ``loopAwake()`` follow, then ``roundEnded``).
    func roundBegan() {
        candidates.removeAll(keepingCapacity: true)
        othersAwake = false
    }

    /// `loop` was just looked at (``PingedLoopWatcher/lookOrPing()``): a candidate if it sleeps in
    /// `epoll_wait`, else it keeps the rounds going.
    func lookedAt(_ loop: PingedLoopWatcher) {
        if let fd = loop.asleepEpollFD { candidates.append((loop, fd)) } else { othersAwake = true }
    }

    /// A loop that cannot rest needs this round's successor (pinged, busy, the pool scanned).
    func loopAwake() { othersAwake = true }

    /// The round's looks are over; `othersAwake` when anything else wants the 40 ms rounds.
    /// Returns whether the loops found asleep rest now (then none of them needs a look).
    func roundEnded(othersAwake awake: Bool, now: MonotonicInstant, lateLookAfter: Duration) -> Bool {
        guard !awake, !othersAwake, !candidates.isEmpty else {
            quietLooks = 0
            return false
        }
        quietLooks += 1
        guard quietLooks >= looksNeeded, let set = restSet else { return false }
        let restingBefore = resting.count
        var allArmed = true
        for (loop, fd) in candidates {
            let token = UInt64(UInt(bitPattern: ObjectIdentifier(loop)))
            let rc = sw_loop_rest_arm(set, fd, token)
            guard rc == 0 else {
                if !armFailureLogged {
                    armFailureLogged = true
                    logger.notice("an event loop cannot rest; it is looked at every period",
                                  metadata: ["loop": "\(loop.probe.name)", "descriptor": "\(fd)", "error": "\(-rc)"])
                }
                allArmed = false
                break
            }
            resting.append((token, fd, loop))
            // Watched from here on, but an event that came between the look and the watch would
            // not wake us: the loop must not have run since the look.
            guard loop.stillAsleep() else {
                allArmed = false
                break
            }
        }
        guard allArmed else {
            for entry in resting[restingBefore...] { _ = sw_loop_rest_disarm(set, entry.fd) }
            resting.removeSubrange(restingBefore...)
            return false
        }
        for entry in resting[restingBefore...] { entry.loop.beginRest() }
        if restingBefore == 0 {
            restBegan = now
            // Nested in epoll, a wake the loop took first is lost: looked at again, late.
            lateLookAt = keepsWakes ? nil : now + lateLookAfter
        }
        return true
    }

    /// The sleep of the loops that rested from ``restBegan`` ended at `until`: a short one makes
    /// the next rest wait for more quiet looks.
    private func rested(until: MonotonicInstant) {
        if let began = restBegan {
            looksNeeded = until - began < Self.shortRest ? min(looksNeeded * 2, Self.maxLooksBeforeRest) : 1
        }
        restBegan = nil
        lateLookAt = nil
        quietLooks = 0
    }

}
