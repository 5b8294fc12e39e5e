import CSampler

/// When the cooperative pool may go unscanned. The pool-job scans every 40 ms are most of an idle
/// watchdog's cost (a wake-up each, about 60 µs of CPU on a VM), yet a pool whose workers all wait
/// for work has no job to watch. So once a scan finds it so, the watchdog arms a hook on the
/// runtime's global enqueue (`sw_pool_wake`) and stops scanning: the next enqueue stamps its
/// instant, every worker is known to have been outside any job until then, and the pool is scanned
/// one scan period later, so a job that began with that enqueue is dated as closely as under scans
/// every 40 ms. The enqueue sets the pool timer to wake the watchdog for that scan (one wake-up per
/// burst of work), or, for a watchdog without an epoll set (``LoopRest``), wakes it at once. A late
/// scan after ``DetectionSchedule/idlePoll`` catches work that reached a worker without the global
/// enqueue, unless the watchdog sleeps without a period (``IdleSleep``), which it does only while
/// the hook is ours: every job given to the pool passes it (a `Task.sleep` that ends, too: its
/// task is enqueued again then).
///
/// The hook costs an enqueue one relaxed load while the pool is busy, and a clock read and a timer
/// (or futex) system call once per rest. A watchdog woken every few ms for pings or loop looks is not woken by the
/// enqueue: it notices it in its next round, and scans the pool in the first round half a scan
/// period after the enqueue. A pool given work every few ms would be woken more often than it is scanned, so each rest
/// shorter than ``shortRest`` doubles the quiet scans the next one needs (up to
/// ``maxScansBeforeRest``). The hook is chained to one already installed (SwiftNIO's executor
/// take-over) and removed when the last watchdog using it stops; NIO's take-over refuses to install
/// over another hook, so an application that hands the global executor to NIO must do so before
/// starting a watchdog.
struct PoolRest {
    /// A rest shorter than this makes the next one wait for twice as many quiet scans.
    static let shortRest = Duration.milliseconds(500)
    static let maxScansBeforeRest = 32

    /// Whether this watchdog installed the enqueue hook (see `sw_pool_wake_install`): it then
    /// uninstalls it when it stops.
    let installed: Bool
    /// Whether the pool may rest: the hook was installed and is still ours. Another hook that
    /// replaced ours without chaining to it would leave enqueues unseen, so rests end for good.
    private(set) var hooked: Bool
    /// Scans in a row that found every worker waiting for work, and how many a rest needs.
    private var quietScans = 0
    private var scansNeeded = 1
    /// The wake-up generation and instant when the hook was armed (before the scan that may begin
    /// a rest, so that work given after that scan looked wakes the watchdog).
    private var armed: (generation: UInt32, at: MonotonicInstant)?
    /// Whether the armed enqueue wakes the watchdog.
    private var wakes = false
    /// When the current rest began; `nil` while the pool is scanned.
    private var restBegan: MonotonicInstant?
    /// Until when the pool counts as free after a rest ended: its first scan after the work came.
    private var freeUntil: MonotonicInstant?

    init(installed: Bool) {
        self.installed = installed
        hooked = installed
    }

    /// Whether the pool rests now: no scan due but the late one, and no ping or look.
    var isResting: Bool { restBegan != nil }

    /// Whether the pool is free without a look at `now`: it rests, or its rest ended with work
    /// given to it less than a scan period ago, which the scan then will look at.
    func isFree(at now: MonotonicInstant) -> Bool { isResting || freeUntil.map { now < $0 } == true }

    /// Ends the rest when the pool was given work since it began (or the hook is no longer ours, so
    /// an enqueue would not say so). Returns until when the pool had no work: the enqueue's instant
    /// (`now` when not known), or `nil` when the pool still rests.
    /// `scanAfter`: how long after the enqueue the pool will be scanned (free until then).
    mutating func endIfWoken(now: MonotonicInstant, scanAfter: Duration) -> MonotonicInstant? {
        guard let armed, let began = restBegan else { return nil }
        let stillHooked = sw_pool_wake_is_hooked() != 0
        guard sw_pool_wake_generation() != armed.generation || !stillHooked else { return nil }
        if !stillHooked { hooked = false }
        // The generation also moves for a watchdog's stop or a change of loops: the enqueue's
        // instant counts only when one came after the arming.
        let enqueued = sw_pool_wake_enqueued_at()
        let until = enqueued > armed.at.nanoseconds ? min(MonotonicInstant(nanoseconds: enqueued), now) : now
        self.armed = nil
        restBegan = nil
        quietScans = 0
        scansNeeded = until - began < Self.shortRest ? min(scansNeeded * 2, Self.maxScansBeforeRest) : 1
        freeUntil = until + scanAfter
        return until
    }

    /// Before a scan: arms the hook when this scan, finding the pool quiet too, would begin a rest.
    /// `wake`: the enqueue must wake the watchdog; without, the watchdog wakes every few ms anyway
    /// (pings and looks) and sees the enqueue in its next round. `timerDelay`: the enqueue wakes
    /// it through the pool timer that much later, when the scan is due (a watchdog that sleeps in
    /// its epoll set, ``LoopRest``).
    mutating func prepareScan(now: MonotonicInstant, wake: Bool, timerDelay: Duration? = nil) {
        guard hooked, armed == nil, quietScans + 1 >= scansNeeded else { return }
        guard sw_pool_wake_is_hooked() != 0 else {
            hooked = false
            return
        }
        armed = (sw_pool_wake_generation(), now)
        arm(wake: wake, timerDelay: timerDelay)
    }

    private mutating func arm(wake: Bool, timerDelay: Duration?) {
        wakes = wake
        if wake, let timerDelay {
            sw_pool_wake_arm_after(timerDelay.clampedNanoseconds)
        } else {
            sw_pool_wake_arm(wake ? 1 : 0)
        }
    }

    /// Whether the pool rests with its enqueue armed to wake the watchdog: a watchdog that sleeps
    /// without a period (``IdleSleep``) needs no late scan then. A rest armed without the wake (the
    /// watchdog woke every few ms for pings) is armed again with it; an enqueue that came before is
    /// in the generation, which the watchdog's sleep compares. `false` when the hook is no longer
    /// ours (another hook on top may not chain to it).
    mutating func wakesWatchdog(timerDelay: Duration?) -> Bool {
        guard isResting, hooked, sw_pool_wake_is_hooked() != 0 else { return false }
        if !wakes { arm(wake: true, timerDelay: timerDelay) }
        return true
    }

    /// After a scan: whether it found every worker waiting for work.
    mutating func scanned(quiet: Bool, now: MonotonicInstant) {
        freeUntil = nil
        guard quiet else {
            quietScans = 0
            armed = nil
            restBegan = nil
            return
        }
        quietScans += 1
        if restBegan == nil, armed != nil, quietScans >= scansNeeded { restBegan = now }
    }
}
