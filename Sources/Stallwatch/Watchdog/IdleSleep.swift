import CSampler
import Logging

/// Lets a watchdog whose loops and pool all rest sleep without a period: nothing wakes it until a
/// loop, the pool or the process itself gives it something to look at.
///
/// What ends the sleep, and why nothing is missed:
/// - a resting event loop's event: its AIO poll request (``LoopRest``) keeps the wake until read,
///   so no late look is needed (where loops are nested in epoll instead, the sleep is not taken);
/// - the pool's first enqueue (``PoolRest``, armed to wake the watchdog, through its timer);
/// - a heartbeat probe's `busy()`: the watchdog counts itself into each probe's sleeping watchdogs,
///   then `membarrier(2)` makes every running thread pass a full barrier, so either this side sees
///   the probe's stamp or the probe sees the count and wakes the watchdog; the probe pays a compiler
///   fence and one relaxed load (where the barrier is refused, probes keep the periodic rounds);
/// - the process's CPU use: a timer on the process's CPU clock (``sw_cpu_wake_open``) expires
///   after ``cpuBeforeWake`` of it, so the CPU watch still sees a process that starts burning CPU
///   within about half a second (where the timer cannot be made, the sleep is not taken);
/// - `stop()`, a change of loops, a feedback counter's crossing: the wake-up generation.
/// The sleep is bounded by ``longest`` (and by ``ProcessMetrics/interval`` when process metrics are
/// kept, their only update).
final class IdleSleep {
    /// The longest sleep: a bound, not a period.
    static let longest = Duration.seconds(300)

    private let logger: Logger
    private var cpuWake: OpaquePointer?
    /// Why the sleep cannot be taken at all, said once.
    private var unavailable: String?
    private var unavailableLogged = false
    /// Whether heartbeat probes can wake the watchdog (the expedited barrier is registered).
    private let barrierError: Int32
    private var barrierRefusalLogged = false
    private var disarmFailureLogged = false
    /// The probes whose `busy()` now wakes the watchdog (each counted in once).
    private var armedProbes: [HeartbeatProbe] = []
    /// Whether the watchdog sleeps so now (set by ``begin(heartbeats:cpuBeforeWake:)``).
    private(set) var isSleeping = false

    /// Opens the CPU wake on the calling thread (the watchdog's: the timer signals it) and adds it to
    /// `loopRest`'s set; `avoidSignal` is the sampler's signal.
    init(loopRest: LoopRest, avoidSignal: Int32, logger: Logger) {
        self.logger = logger
        barrierError = sw_barrier_register()
        guard loopRest.hasSet else {
            unavailable = "the watchdog has no epoll set to sleep in"
            return
        }
        var error: Int32 = 0
        guard let wake = sw_cpu_wake_open(avoidSignal, &error) else {
            unavailable = "no timer on the process's CPU clock (error \(-error))"
            return
        }
        let added = loopRest.addWaker(sw_cpu_wake_fd(wake))
        guard added == 0 else {
            sw_cpu_wake_close(wake)
            unavailable = "the CPU timer's descriptor cannot be watched (error \(-added))"
            return
        }
        cpuWake = wake
    }

    /// Closes the CPU wake; on the watchdog's thread.
    func close() {
        woke()
        if let cpuWake { sw_cpu_wake_close(cpuWake) }
        cpuWake = nil
    }

    /// Begins a sleep without a period when every heartbeat probe is idle and can wake the
    /// watchdog; `heartbeats` lists them. Returns whether it began; then the next round ends it
    /// (``woke()``).
    func begin<Probes: Sequence>(heartbeats: Probes, cpuBeforeWake: Duration) -> Bool where Probes.Element == HeartbeatProbe {
        guard let cpuWake else {
            if let unavailable, !unavailableLogged {
                unavailableLogged = true
                logger.info("an idle watchdog keeps waking periodically", metadata: ["reason": "\(unavailable)"])
            }
            return false
        }
        var anyProbe = false
        for probe in heartbeats {
            guard probe.busySince == nil else { return false }
            anyProbe = true
        }
        if anyProbe {
            guard barrierError == 0 else {
                if !barrierRefusalLogged {
                    barrierRefusalLogged = true
                    logger.info("an idle watchdog with heartbeat probes keeps waking periodically",
                                metadata: ["reason": "membarrier refused (error \(-barrierError))"])
                }
                return false
            }
            for probe in heartbeats {
                probe.wakeOnBusy(true)
                armedProbes.append(probe)
            }
            // Every probe's `busy()` that stored its stamp before this barrier is seen below; every
            // later one sees its flag.
            let rc = sw_barrier_all_threads()
            guard rc == 0 else {
                if !barrierRefusalLogged {
                    barrierRefusalLogged = true
                    logger.info("an idle watchdog with heartbeat probes keeps waking periodically",
                                metadata: ["reason": "membarrier failed (error \(-rc))"])
                }
                return disarmProbes()
            }
            guard armedProbes.allSatisfy({ $0.busySince == nil && !$0.hasFeedbackCrossings }) else { return disarmProbes() }
        }
        let armed = sw_cpu_wake_arm(cpuWake, cpuBeforeWake.clampedNanoseconds)
        guard armed >= 0 else {
            logger.info("an idle watchdog keeps waking periodically", metadata: ["reason": "the CPU timer cannot be set (error \(-armed))"])
            sw_cpu_wake_close(cpuWake)
            self.cpuWake = nil
            return disarmProbes()
        }
        isSleeping = true
        sleptAt = MonotonicClock.now()
        return true
    }

    /// When the sleep began (meaningful while ``isSleeping``).
    private var sleptAt = MonotonicInstant(nanoseconds: 0)

    /// The earliest busy stamp a probe left during the sleep: its `busy()` woke the watchdog then,
    /// so a round that begins much later was held up (a stop of the process, a starved watchdog)
    /// as surely as one that woke past its planned time. `nil` when no probe turned busy (the CPU
    /// timer, a loop's event or the pool woke it). Call before ``woke()``.
    func wakeRequestedAt() -> MonotonicInstant? {
        guard isSleeping else { return nil }
        var earliest: MonotonicInstant?
        for probe in armedProbes {
            for stamp in [probe.busySince, probe.lastEndedPeriod?.since] {
                guard let stamp, stamp >= sleptAt else { continue }
                if earliest.map({ stamp < $0 }) ?? true { earliest = stamp }
            }
        }
        return earliest
    }

    /// The sleep (if any) is over: probes stop waking the watchdog and the CPU timer is disarmed.
    func woke() {
        guard isSleeping else { return }
        isSleeping = false
        _ = disarmProbes()
        // Left armed, the timer would only wake a later round early: said once, not fatal.
        if let cpuWake, case let rc = sw_cpu_wake_arm(cpuWake, 0), rc < 0, !disarmFailureLogged {
            disarmFailureLogged = true
            logger.warning("the CPU timer of the watchdog's idle sleep cannot be disarmed", metadata: ["error": "\(-rc)"])
        }
    }

    private func disarmProbes() -> Bool {
        for probe in armedProbes { probe.wakeOnBusy(false) }
        armedProbes.removeAll(keepingCapacity: true)
        return false
    }
}
