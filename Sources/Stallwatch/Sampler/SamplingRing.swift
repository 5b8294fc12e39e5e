import CSampler
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// Periodic stack sampling of one thread with no sampler thread awake: a kernel timer on the
/// thread's own CPU clock sends the sampling signal to it every `interval` of CPU time, and the
/// handler walks its stack (frame pointers) into a ring you drain when you want.
///
/// CPU-time timers fire only while the thread runs: a thread blocked in a system call is never
/// interrupted (no EINTR), and a thread that does not run costs nothing. The kernel caps such timers
/// at its tick rate (250 Hz on Debian). Stop the ring (or let it go) to delete the timer.
package final class SamplingRing: Sendable {
    /// The pace of a ring.
    package enum Clock: Sendable, Equatable {
        /// The sampled thread's CPU time (the default): no EINTR, nothing while it does not run.
        case threadCPU
        /// Wall time: also fires while the thread sleeps or waits, interrupting its system calls.
        case wall
    }

    /// The sampled thread.
    package let thread: ThreadID
    /// Time between samples, on `clock`.
    package let interval: Duration
    /// Most samples kept before the oldest are overwritten.
    package let capacity: Int
    /// What takes the samples: the timer ring's signal, or the kernel for a perf event.
    package let driver: SamplingDriver
    /// Why the perf-event driver was asked for and not used (the kernel's refusal), or `nil`.
    package let fallbackReason: String?
    private let ring: Int32
    /// The C ring's index (for tests that drive the C layer directly).
    var index: Int32 { ring }
    private let state: Mutex<State>

    /// What the lock guards: the read position, and the buffer drains copy the C ring into
    /// (allocated once per ring, not per drain).
    private struct State: ~Copyable {
        var nextSequence: UInt64 = 0
        var stopped = false
        var lost = 0
        let buffer: UnsafeMutablePointer<sw_stack_t>
        let bufferCapacity: Int

        init(bufferCapacity: Int) {
            self.bufferCapacity = bufferCapacity
            buffer = .allocate(capacity: bufferCapacity)
        }

        deinit { buffer.deallocate() }
    }

    /// Starts sampling `thread` every `interval`. The sampler's handler must be installed: pass the
    /// ``StackSampler`` you created. With ``StackSampler/Configuration/signalFreeSampling`` set, the
    /// kernel samples the thread with a perf event where it permits it (no signal), and the timer
    /// ring samples it where it does not.
    package convenience init(sampler: StackSampler, thread: ThreadID, interval: Duration = .milliseconds(50),
                            clock: Clock = .threadCPU, capacity: Int = 20, maxFrames: Int? = nil) throws(SamplerError) {
        try self.init(sampler: sampler, thread: thread, interval: interval, clock: clock, capacity: capacity,
                      maxFrames: maxFrames, driver: sampler.configuration.signalFreeSampling ? .perfEvent : .timerSignal)
    }

    /// Starts sampling with `driver` preferred: `.perfEvent` falls back to the timer ring where the
    /// kernel refuses perf events (``fallbackReason`` says why) or the clock is wall time.
    package init(sampler: StackSampler, thread: ThreadID, interval: Duration = .milliseconds(50),
                 clock: Clock = .threadCPU, capacity: Int = 20, maxFrames: Int? = nil,
                 driver preferred: SamplingDriver, perfStackBytes: UInt32 = SW_PERF_RING_DEFAULT_STACK_BYTES) throws(SamplerError) {
        guard interval > .zero else { throw .invalidArgument("interval must be positive, got \(interval)") }
        guard (1...Int(SW_RING_MAX_CAPACITY)).contains(capacity) else {
            throw .invalidArgument("capacity must be in 1...\(SW_RING_MAX_CAPACITY), got \(capacity)")
        }
        let frames = maxFrames ?? sampler.configuration.maxFrames
        guard (1...Int(SW_MAX_FRAMES)).contains(frames) else {
            throw .invalidArgument("maxFrames must be in 1...\(SW_MAX_FRAMES), got \(frames)")
        }
        var refusal: String?
        if preferred == .perfEvent {
            if clock != .threadCPU {
                refusal = "a wall-clock ring needs the signal (a perf task-clock event counts CPU time)"
            } else {
                let rc = sw_perf_ring_start(thread.rawValue, interval.clampedNanoseconds, UInt32(frames),
                                            UInt32(capacity), perfStackBytes)
                if rc >= 0 {
                    self.ring = rc
                    self.state = Mutex(State(bufferCapacity: capacity * 2))
                    self.thread = thread
                    self.interval = interval
                    self.capacity = capacity
                    self.driver = .perfEvent
                    self.fallbackReason = nil
                    return
                }
                if rc == Int32(SW_ERR_THREAD_GONE) { throw .threadGone(thread) }
                refusal = SamplingDriver.refusal(code: rc)
            }
        }
        let rc = sw_ring_start(thread.rawValue, interval.clampedNanoseconds,
                               clock == .threadCPU ? SW_RING_CLOCK_THREAD_CPU : SW_RING_CLOCK_MONOTONIC,
                               UInt32(frames), UInt32(capacity))
        guard rc >= 0 else {
            throw SamplerError.from(code: rc, thread: thread, signal: sampler.configuration.signal,
                                    timeout: .zero, operation: "starting a sampling timer for \(thread)"
                                        + (refusal.map { " (perf events refused: \($0))" } ?? ""))
        }
        self.ring = rc
        self.state = Mutex(State(bufferCapacity: capacity))
        self.thread = thread
        self.interval = interval
        self.capacity = capacity
        self.driver = .timerSignal
        self.fallbackReason = refusal
    }

    deinit {
        stop()
        if driver == .perfEvent { _ = sw_perf_ring_release(ring) }
    }

    /// Samples taken since the start (including any not drained or lost).
    package var taken: UInt64 {
        driver == .perfEvent ? state.withLock { _ in sw_perf_ring_taken(ring) } : sw_ring_taken(ring)
    }

    /// Samples overwritten before they were drained, so far.
    package var lost: Int { state.withLock { $0.lost } }

    /// Takes the samples recorded since the last drain, oldest first.
    package func drain() -> [CapturedStack] {
        var stacks: [CapturedStack] = []
        drain { stacks.append(CapturedStack($0)) }
        return stacks
    }

    /// Hands each sample recorded since the last drain to `visit`, oldest first, as the C layer
    /// wrote it (valid only during the call), under the ring's lock: nothing is allocated here.
    package func drain(_ visit: (UnsafePointer<sw_stack_t>) -> Void) {
        state.withLock { st in
            let max = st.bufferCapacity
            let buf = st.buffer
            var count: UInt32 = 0
            if driver == .perfEvent {
                // The kernel's ring may hold more than one buffer's worth: read until it is empty.
                repeat {
                    let lost = sw_perf_ring_read(ring, buf, UInt32(max), &count)
                    if lost > 0 { st.lost += Int(lost) }
                    for i in 0..<Int(count) { visit(buf + i) }
                } while count == UInt32(max)
                return
            }
            var next = st.nextSequence
            let lost = sw_ring_read(ring, &next, buf, UInt32(max), &count)
            st.nextSequence = next
            if lost > 0 { st.lost += Int(lost) }
            for i in 0..<Int(count) { visit(buf + i) }
        }
    }

    /// Samples every `interval` of the clock from now on (the watchdog stretches it to stay inside
    /// its CPU budget when many loops are sampled at once).
    /// - Throws: ``SamplerError`` when the ring is stopped or the interval is not positive.
    package func setInterval(_ interval: Duration) throws(SamplerError) {
        let rc = driver == .perfEvent ? sw_perf_ring_set_interval(ring, interval.clampedNanoseconds)
                                      : sw_ring_set_interval(ring, interval.clampedNanoseconds)
        guard rc == 0 else {
            throw SamplerError.from(code: rc, thread: thread, signal: 0, timeout: .zero, operation: "changing a sampling ring's interval")
        }
    }

    /// Takes the next sample after `first` of the clock, then one every ``interval`` again: a loop
    /// just suspected gets its first sample soon, not a whole interval of CPU time later. A thread
    /// starved of CPU among many (64 spinning loops on 2 cores run 1/32 of a core each) would
    /// otherwise have none by its threshold, and its report would wait for a one-off capture that
    /// waits in turn for the thread to be scheduled. A perf-event ring keeps its period.
    /// Returns whether the timer took it (if not, the ring samples at its interval as before).
    @discardableResult
    package func sampleFirst(after first: Duration) -> Bool {
        guard driver == .timerSignal, first > .zero, first < interval else { return false }
        return sw_ring_fire_after(ring, first.clampedNanoseconds, interval.clampedNanoseconds) == 0
    }

    /// Deletes the timer. Idempotent. Samples already in the ring can still be drained.
    package func stop() {
        let stopNow = state.withLock { st -> Bool in
            defer { st.stopped = true }
            return !st.stopped
        }
        if stopNow { _ = driver == .perfEvent ? sw_perf_ring_stop(ring) : sw_ring_stop(ring) }
    }
}

/// What takes a ring's samples. A struct with static members, not an enum: drivers may be added.
package struct SamplingDriver: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The name written into reports.
    package let name: String

    /// A kernel timer on the thread's CPU clock sends the sampling signal; the handler walks frame
    /// pointers into the ring (the default).
    package static let timerSignal = SamplingDriver(name: "timer-signal")
    /// A perf task-clock event on the thread: the kernel records its call chain (and registers and a
    /// stack copy for the unwind-table walk) into a memory-mapped ring; no signal is delivered.
    package static let perfEvent = SamplingDriver(name: "perf-event")

    package var description: String { name }

    private init(name: String) { self.name = name }

    package init(from decoder: any Decoder) throws {
        name = try decoder.singleValueContainer().decode(String.self)
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(name)
    }

    /// Says why the kernel refused a perf event (`code`: a negative errno or SW_ERR_*).
    package static func refusal(code: Int32) -> String {
        let e = -code
        let paranoid = (try? String(contentsOfFile: "/proc/sys/kernel/perf_event_paranoid", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let what = code < 0 && code > -4096 ? String(cString: strerror(e)) : "error \(code)"
        switch e {
        case EACCES:
            return "perf_event_open: \(what) (kernel.perf_event_paranoid is \(paranoid ?? "unreadable"); above 2 refuses this process's own threads)"
        case EPERM:
            return "perf_event_open: \(what) (a seccomp filter, as in Docker's default profile, or over the perf mlock allowance)"
        case ENOSYS, ENOENT, ENODEV, EOPNOTSUPP:
            return "perf_event_open: \(what) (no perf events in this kernel or container)"
        default:
            return "perf_event_open: \(what)"
        }
    }
}
