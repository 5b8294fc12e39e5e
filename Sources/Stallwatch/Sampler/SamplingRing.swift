import CSampler
import Glibc
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
    private let ring: Int32
    /// The C ring's index (for tests that drive the C layer directly).
    var index: Int32 { ring }
    private let state = Mutex<(nextSequence: UInt64, stopped: Bool, lost: Int)>((0, false, 0))

    /// Starts sampling `thread` every `interval`. The sampler's handler must be installed: pass the
    /// ``StackSampler`` you created.
    package init(sampler: StackSampler, thread: ThreadID, interval: Duration = .milliseconds(50),
                clock: Clock = .threadCPU, capacity: Int = 20, maxFrames: Int? = nil) throws(SamplerError) {
        guard interval > .zero else { throw .invalidArgument("interval must be positive, got \(interval)") }
        guard (1...Int(SW_RING_MAX_CAPACITY)).contains(capacity) else {
            throw .invalidArgument("capacity must be in 1...\(SW_RING_MAX_CAPACITY), got \(capacity)")
        }
        let frames = maxFrames ?? sampler.configuration.maxFrames
        guard (1...Int(SW_MAX_FRAMES)).contains(frames) else {
            throw .invalidArgument("maxFrames must be in 1...\(SW_MAX_FRAMES), got \(frames)")
        }
        let rc = sw_ring_start(thread.rawValue, interval.clampedNanoseconds,
                               clock == .threadCPU ? SW_RING_CLOCK_THREAD_CPU : SW_RING_CLOCK_MONOTONIC,
                               UInt32(frames), UInt32(capacity))
        guard rc >= 0 else {
            throw SamplerError.from(code: rc, thread: thread, signal: sampler.configuration.signal,
                                    timeout: .zero, operation: "starting a sampling timer for \(thread)")
        }
        self.ring = rc
        self.thread = thread
        self.interval = interval
        self.capacity = capacity
    }

    deinit { stop() }

    /// Samples taken since the start (including any not drained or lost).
    package var taken: UInt64 { sw_ring_taken(ring) }

    /// Samples overwritten before they were drained, so far.
    package var lost: Int { state.withLock { $0.lost } }

    /// Takes the samples recorded since the last drain, oldest first.
    package func drain() -> [CapturedStack] {
        state.withLock { st -> [CapturedStack] in
            let max = capacity
            let buf = UnsafeMutablePointer<sw_stack_t>.allocate(capacity: max)
            defer { buf.deallocate() }
            var count: UInt32 = 0
            var next = st.nextSequence
            let lost = sw_ring_read(ring, &next, buf, UInt32(max), &count)
            st.nextSequence = next
            if lost > 0 { st.lost += Int(lost) }
            return (0..<Int(count)).map { CapturedStack(buf + $0) }
        }
    }

    /// Samples every `interval` of the clock from now on (the watchdog stretches it to stay inside
    /// its CPU budget when many loops are sampled at once).
    /// - Throws: ``SamplerError`` when the ring is stopped or the interval is not positive.
    package func setInterval(_ interval: Duration) throws(SamplerError) {
        let rc = sw_ring_set_interval(ring, interval.clampedNanoseconds)
        guard rc == 0 else {
            throw SamplerError.from(code: rc, thread: thread, signal: 0, timeout: .zero, operation: "changing a sampling ring's interval")
        }
    }

    /// Deletes the timer. Idempotent. Samples already in the ring can still be drained.
    package func stop() {
        let stopNow = state.withLock { st -> Bool in
            defer { st.stopped = true }
            return !st.stopped
        }
        if stopNow { _ = sw_ring_stop(ring) }
    }
}
