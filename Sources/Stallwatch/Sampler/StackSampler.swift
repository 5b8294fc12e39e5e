import CSampler
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Captures the stacks of other threads of this process.
///
/// Create one and keep it: creating it installs the signal handler (once per process; it stays
/// installed so that a late signal never meets the default action), primes libunwind and reads the
/// memory map — all outside any handler. Every capture waits at most its timeout.
///
/// ```swift
/// let sampler = try StackSampler()
/// let stack = try sampler.captureStack(of: workerThread)
/// print(Symbolizer.shared.describe(stack))
/// ```
package final class StackSampler: Sendable {
    /// How a sampler captures.
    package struct Configuration: Sendable, Equatable {
        /// The signal that carries requests. SIGPROF (the default) is the one signal that reaches
        /// libdispatch worker threads (the Swift concurrency pool, the main-queue drainer).
        package var signal: Int32 = SIGPROF
        /// Chain to a handler already installed for `signal` (for signals that are not ours) instead
        /// of refusing to start. Existing handlers are never silently replaced.
        package var chainExistingHandler: Bool = true
        /// The default unwinder.
        package var unwinder: Unwinder = .framePointer
        /// Most frames per stack (1...256).
        package var maxFrames: Int = 128
        /// How long a capture waits for the thread to answer.
        package var timeout: Duration = .milliseconds(100)
        /// How long a thread held still by ``StackSampler/snapshot(of:unwinder:whileHeld:)`` waits to be
        /// released before it resumes on its own.
        package var holdLimit: Duration = .milliseconds(250)
        /// When `false` (the default), a thread blocked in a system call is not signalled: a signal
        /// would make `nanosleep`, `epoll_wait`, `poll`... return early with EINTR. Its stack is
        /// recovered from the kernel's SP/PC instead (``Unwinder/syscallScan``).
        package var signalThreadsInSystemCalls: Bool = false

        /// When `true`, sampling rings (``SamplingRing``, and so the watchdog's sampling of stalled
        /// loops) use a kernel perf event on the thread (`perf_event_open`, a task-clock event whose
        /// samples the kernel writes into a memory-mapped ring) where the kernel permits it: no
        /// signal is delivered, and threads that block every signal are sampled too. Where it is
        /// refused (`kernel.perf_event_paranoid` above 2, a container's seccomp profile) the timer
        /// ring's signal samples the thread instead, the watchdog logs why, and reports name the
        /// driver that sampled. Default `false`: the timer ring.
        package var signalFreeSampling: Bool = false

        /// The defaults: SIGPROF, chaining, frame pointers, 128 frames, 100 ms timeout.
        package init() {}

        /// Throws when a value makes no sense.
        package func validate() throws(SamplerError) {
            guard signal > 0 && signal < 65 else { throw .invalidArgument("signal \(signal) is not a signal number") }
            guard (1...Int(SW_MAX_FRAMES)).contains(maxFrames) else {
                throw .invalidArgument("maxFrames must be in 1...\(SW_MAX_FRAMES), got \(maxFrames)")
            }
            guard timeout > .zero else { throw .invalidArgument("timeout must be positive, got \(timeout)") }
            guard holdLimit > .zero else { throw .invalidArgument("holdLimit must be positive, got \(holdLimit)") }
            guard unwinder != .syscallScan else {
                throw .invalidArgument("syscallScan is chosen per thread, not as the default unwinder")
            }
        }
    }

    /// The configuration this sampler was created with.
    package let configuration: Configuration
    /// Where scans of blocked threads write their stack (see ``BlockedCaptureBuffer``).
    private let blockedBuffer = BlockedCaptureBuffer()

    /// Installs the handler (or reuses the one installed by an earlier sampler with the same signal).
    /// Where nothing samples (``SamplingSupport``) nothing is installed: the sampler exists so a
    /// watchdog runs, and every capture fails as it does before installation.
    package init(configuration: Configuration = Configuration()) throws(SamplerError) {
        try configuration.validate()
        guard SamplingSupport.isAvailable else {
            self.configuration = configuration
            return
        }
        let rc = sw_sampler_install(configuration.signal, configuration.chainExistingHandler ? 1 : 0)
        switch rc {
        case 0: break
        case -EBUSY:
            throw .anotherSignalInstalled(installed: sw_sampler_signal(), requested: configuration.signal)
        case Int32(SW_ERR_INVALID):
            throw .invalidArgument("signal \(configuration.signal) (\(signalName(configuration.signal))) cannot be used for sampling; fatal signals belong to crash handlers")
        default:
            throw SamplerError.from(code: rc, thread: .current, signal: configuration.signal,
                                    timeout: configuration.timeout, operation: "installing the sampling handler")
        }
        self.configuration = configuration
    }

    /// Captures the stack of `thread`.
    ///
    /// A thread blocked in a system call is not signalled unless the configuration says so: its
    /// stack comes from ``captureBlockedStack(of:)``. Otherwise the thread is interrupted by the
    /// signal and walked with `unwinder` (default: the configuration's). A running thread that
    /// blocks the signal is sampled by the kernel instead (``perfCapture(_:timeout:)``); only where
    /// that is refused too does ``SamplerError/signalBlocked(_:signal:)`` come back.
    /// A signal not handled within `timeout` is followed by the kernel's sample, for as long again
    /// (``signalCaptureOrKernelSample(_:unwinder:timeout:)``).
    package func captureStack(of thread: ThreadID, unwinder: Unwinder? = nil,
                             timeout: Duration? = nil) throws(SamplerError) -> CapturedStack {
        try captureStack(of: thread, unwinder: unwinder, timeout: timeout, kernelSample: true)
    }

    /// ``captureStack(of:unwinder:timeout:)``; `kernelSample` `false` where a deadline must hold:
    /// no kernel sample after a signal that timed out.
    package func captureStack(of thread: ThreadID, unwinder: Unwinder?, timeout: Duration?,
                              kernelSample: Bool) throws(SamplerError) -> CapturedStack {
        if !configuration.signalThreadsInSystemCalls {
            if let stack = try blockedStackIfBlocked(thread) { return stack }
        }
        let timeout = timeout ?? configuration.timeout
        do {
            let unwinder = unwinder ?? configuration.unwinder
            return try kernelSample ? signalCaptureOrKernelSample(thread, unwinder: unwinder, timeout: timeout)
                                    : signalCapture(thread, unwinder: unwinder, timeout: timeout)
        } catch .signalBlocked(let t, let signal) {
            if let stack = try? blockedStackIfBlocked(thread) { return stack }
            guard let stack = try? perfCapture(thread, timeout: timeout) else { throw .signalBlocked(t, signal: signal) }
            return stack
        }
    }

    /// ``signalCapture(_:unwinder:timeout:)``, and when the signal is not handled in time, the
    /// kernel's sample of the thread (``perfCapture(_:timeout:)``): a thread inside one long system
    /// call (a read of a large cached file) runs in the kernel, where a signal waits for the call's
    /// return, and the kernel's sample gives the user stack the call was made from. The signal's
    /// timeout is thrown when the kernel's sample fails too.
    package func signalCaptureOrKernelSample(_ thread: ThreadID, unwinder: Unwinder,
                                             timeout: Duration) throws(SamplerError) -> CapturedStack {
        do {
            return try signalCapture(thread, unwinder: unwinder, timeout: timeout)
        } catch .timedOut(let t, let after) {
            guard let stack = try? perfCapture(thread, timeout: timeout) else { throw .timedOut(t, after: after) }
            return stack
        }
    }

    /// Captures the stack of `thread` with the signal. Unless the configuration signals threads in
    /// system calls, a thread asleep in one when the signal would go gets none (it would end a
    /// `nanosleep` or `epoll_wait` early): its stack is then the one the kernel's SP/PC give.
    package func signalCapture(_ thread: ThreadID, unwinder: Unwinder,
                              timeout: Duration) throws(SamplerError) -> CapturedStack {
        guard unwinder != .syscallScan else { return try captureBlockedStack(of: thread) }
        guard timeout > .zero else { throw .invalidArgument("timeout must be positive, got \(timeout)") }
        let unlessAsleep = !configuration.signalThreadsInSystemCalls
        // Asleep when the signal would have gone, awake again when its syscall file is read: once more.
        for _ in 0..<2 {
            if let stack = try signalCaptureOnce(thread, unwinder: unwinder, timeout: timeout, unlessAsleep: unlessAsleep) {
                return stack
            }
            if let stack = try blockedStackIfBlocked(thread) { return stack }
        }
        throw .system(operation: "capturing \(thread): it fell asleep each time the signal was due, outside any system call",
                      errno: EAGAIN)
    }

    /// One capture by signal; `nil` when `unlessAsleep` and the thread slept just then (no signal sent).
    private func signalCaptureOnce(_ thread: ThreadID, unwinder: Unwinder, timeout: Duration,
                                   unlessAsleep: Bool) throws(SamplerError) -> CapturedStack? {
        let timeoutNs = timeout.clampedNanoseconds
        let result: Result<CapturedStack?, SamplerError> = withUnsafeTemporaryAllocation(of: sw_stack_t.self, capacity: 1) { buf in
            guard let raw = buf.baseAddress else { return .failure(.busy) }
            let maxFrames = UInt32(configuration.maxFrames)
            let rc = unlessAsleep ? sw_capture_awake(thread.rawValue, unwinder.cValue, maxFrames, timeoutNs, raw)
                                  : sw_capture(thread.rawValue, unwinder.cValue, maxFrames, timeoutNs, raw)
            if rc == SW_ERR_ASLEEP { return .success(nil) }
            if rc == SW_ERR_STILL_PENDING {
                // The signal of a request that timed out earlier is still pending: this one would
                // be answered no sooner. The thread has not answered for that long.
                return .failure(.timedOut(thread, after: .nanoseconds(Int64(clamping: raw.pointee.latency_ns))))
            }
            if rc != 0 {
                return .failure(SamplerError.from(code: rc, thread: thread, signal: configuration.signal,
                                                  timeout: timeout, operation: "capturing \(thread)"))
            }
            return .success(CapturedStack(raw))
        }
        return try result.get()
    }

    /// Captures the stack of a *running* thread without a signal: the kernel samples it (a
    /// `perf_event_open` task-clock event on that thread with its registers and a copy of its user
    /// stack) and the walk runs on the copy. For a thread that blocks the sampling signal, which
    /// ``signalCapture(_:unwinder:timeout:)`` cannot reach. A thread that does not run within
    /// `timeout` gives ``SamplerError/timedOut(_:after:)``; a kernel that refuses perf events
    /// (`perf_event_paranoid` above 2, a container's seccomp profile) gives its error.
    package func perfCapture(_ thread: ThreadID, timeout: Duration = .milliseconds(20)) throws(SamplerError) -> CapturedStack {
        guard timeout > .zero else { throw .invalidArgument("timeout must be positive, got \(timeout)") }
        let timeoutNs = timeout.clampedNanoseconds
        let result: Result<CapturedStack, SamplerError> = withUnsafeTemporaryAllocation(of: sw_stack_t.self, capacity: 1) { buf in
            guard let raw = buf.baseAddress else { return .failure(.busy) }
            let rc = sw_capture_perf(thread.rawValue, UInt32(configuration.maxFrames), timeoutNs, raw)
            if rc != 0 {
                return .failure(SamplerError.from(code: rc, thread: thread, signal: configuration.signal,
                                                  timeout: timeout, operation: "sampling \(thread) with a perf event"))
            }
            return .success(CapturedStack(raw))
        }
        return try result.get()
    }

    /// Recovers the stack of a thread blocked in a system call without signalling it.
    /// Throws ``SamplerError/notBlocked(_:)`` when the thread is running or runnable.
    package func captureBlockedStack(of thread: ThreadID) throws(SamplerError) -> CapturedStack {
        try captureBlockedStack(of: thread, reusing: [])
    }

    /// The same, its frames written into `storage` (emptied first): the watchdog hands back an
    /// older stack's storage, so a capture it makes every round copies without allocating.
    package func captureBlockedStack(of thread: ThreadID, reusing storage: consuming [UInt]) throws(SamplerError) -> CapturedStack {
        guard let stack = try blockedStackIfBlocked(thread, reusing: storage) else { throw .notBlocked(thread) }
        return stack
    }

    /// The same with the thread's `syscall` file read through `files` (kept open by the watchdog,
    /// which asks every round while a loop is suspected).
    package func captureBlockedStack(_ files: TaskFiles) throws(SamplerError) -> CapturedStack {
        guard let stack = try blockedStackIfBlocked(files.tid, files: files) else { throw .notBlocked(files.tid) }
        return stack
    }

    private func blockedStackIfBlocked(_ thread: ThreadID, files: TaskFiles? = nil,
                                       reusing storage: consuming [UInt] = []) throws(SamplerError) -> CapturedStack? {
        // The kernel reports the caller as "in" the read of its own syscall file: it is not blocked.
        guard thread != .current else { return nil }
        var sc = sw_thread_syscall_t()
        let rc = files.map { $0.syscall(&sc) } ?? sw_thread_syscall(thread.rawValue, &sc)
        if rc == -ESRCH { throw .threadGone(thread) }
        guard rc == 0 else {
            throw SamplerError.from(code: rc, thread: thread, signal: configuration.signal,
                                    timeout: .zero, operation: "reading /proc/self/task/\(thread.rawValue)/syscall")
        }
        guard sc.nr >= 0 else { return nil }
        var storage = storage
        let result: Result<CapturedStack, SamplerError> = blockedBuffer.with { raw, scratch in
            let rc = sw_capture_blocked_into(thread.rawValue, &sc, UInt32(configuration.maxFrames), raw,
                                             scratch, BlockedCaptureBuffer.scratchBytes)
            if rc != 0 {
                return .failure(SamplerError.from(code: rc, thread: thread, signal: configuration.signal,
                                                  timeout: .zero, operation: "scanning the stack of \(thread)"))
            }
            var frames: [UInt] = []
            swap(&frames, &storage)
            return .success(CapturedStack(raw, reusing: frames))
        }
        return try result.get()
    }

    /// Holds `threads` still together — each captures its stack and then waits in its signal handler
    /// — runs `whileHeld`, then releases them all at once: a consistent snapshot, like matrix's
    /// suspend-all. Threads blocked in a system call are not signalled (unless configured): their
    /// stacks come from a scan, and a blocked thread does not move anyway.
    ///
    /// `whileHeld` must be short and must not allocate or take locks the held threads may hold
    /// (malloc's among them): the threads resume on their own after ``Configuration/holdLimit``.
    /// Nothing is symbolized while threads are held.
    package func snapshot(of threads: [ThreadID], unwinder: Unwinder? = nil,
                         whileHeld: () -> Void = {}) throws(SamplerError) -> Snapshot {
        let unwinder = unwinder ?? configuration.unwinder
        guard unwinder != .syscallScan else { throw .invalidArgument("a snapshot signals threads; use framePointer or libunwind") }
        guard threads.count <= 256 else { throw .invalidArgument("a snapshot holds at most 256 threads, got \(threads.count)") }
        var results = [Result<CapturedStack, SamplerError>?](repeating: nil, count: threads.count)
        var toSignal: [Int] = []
        for (i, t) in threads.enumerated() {
            if !configuration.signalThreadsInSystemCalls {
                do {
                    if let s = try blockedStackIfBlocked(t) { results[i] = .success(s); continue }
                } catch {
                    results[i] = .failure(error)
                    continue
                }
            }
            toSignal.append(i)
        }
        var consistent = true
        var heldCount = 0
        if !toSignal.isEmpty {
            // Everything the held section needs is allocated before anyone is held.
            let tids = toSignal.map { threads[$0].rawValue }
            var codes = [Int32](repeating: 0, count: tids.count)
            let outs = UnsafeMutablePointer<sw_stack_t>.allocate(capacity: tids.count)
            defer { outs.deallocate() }
            let held = tids.withUnsafeBufferPointer { t in
                codes.withUnsafeMutableBufferPointer { c in
                    sw_snapshot_hold(t.baseAddress, t.count, unwinder.cValue, UInt32(configuration.maxFrames),
                                     configuration.timeout.clampedNanoseconds, configuration.holdLimit.clampedNanoseconds,
                                     outs, c.baseAddress)
                }
            }
            if held < 0 {
                throw SamplerError.from(code: held, thread: .current, signal: configuration.signal,
                                        timeout: configuration.timeout, operation: "holding \(tids.count) threads")
            }
            whileHeld()
            consistent = sw_snapshot_release() == 1
            heldCount = Int(held)
            for (k, i) in toSignal.enumerated() {
                if codes[k] == 0 {
                    results[i] = .success(CapturedStack(outs + k))
                } else {
                    results[i] = .failure(SamplerError.from(code: codes[k], thread: threads[i], signal: configuration.signal,
                                                            timeout: configuration.timeout, operation: "holding \(threads[i])"))
                }
            }
        }
        return Snapshot(entries: zip(threads, results).map { tid, r in
            Snapshot.Entry(thread: tid, result: r ?? .failure(.busy))
        }, heldTogether: consistent, heldCount: heldCount)
    }

    /// Re-reads the memory map the handler uses to bound stack walks. Captures do this by themselves
    /// when they meet a new thread; call it after loading or unloading many libraries.
    package func refreshMemoryMap() {
        _ = sw_maps_refresh()
    }

    /// Counters of the process-wide handler.
    package static var statistics: sw_sampler_stats_t {
        var s = sw_sampler_stats_t()
        sw_sampler_stats(&s)
        return s
    }
}
