import CSampler
import StallwatchReport
import Synchronization

/// Learns, once per process, how to read a Swift task's async call chain (`sw_async.h`): where
/// the concurrency runtime resumes a task, and that the contexts read as the walk expects. The
/// probe is a two-deep async chain of this module's own, run on a thread of its own; until it has
/// run, stacks end at the first `await` that suspended, as they did before.
package enum AsyncChainLayout {
    /// What learning came to.
    package enum State: Equatable, Sendable {
        /// Not tried yet, or still running.
        case unknown
        /// Async call chains are walked.
        case learnt
        /// They are not: why, in a sentence.
        case failed(String)
    }

    /// The state now.
    package static var state: State {
        var why: UnsafePointer<CChar>?
        switch sw_async_state(&why) {
        case 1: return .learnt
        case 0: return .unknown
        default: return .failed(why.map { String(cString: $0) } ?? "unknown reason")
        }
    }

    /// Why the async callers of `stack` (leaf first) are missing, when it ran a resumed async
    /// function (a partial function's frame) while chains are not walked; `nil` otherwise.
    package static func missingCallers(in stack: [ReportFrame], state: State = state) -> String? {
        guard stack.contains(where: { $0.isAsync == true }) else { return nil }
        switch state {
        case .learnt: return nil
        case .unknown: return "the concurrency runtime's layout was not learnt yet in this process"
        case .failed(let why): return "the concurrency runtime's layout could not be learnt: \(why)"
        }
    }

    private static let started = Atomic<Bool>(false)

    /// Starts learning in the background, once per process; `onFailure` (the first caller's) hears
    /// why it failed, once.
    package static func learnInBackground(onFailure: @escaping @Sendable (String) -> Void) {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        let executor: ProbeThreadExecutor
        do {
            executor = try ProbeThreadExecutor(name: "sw-async-probe")
        } catch {
            return onFailure("the probe's thread could not be started (error \(error.code))")
        }
        Task(executorPreference: executor) {
            defer { executor.close() }
            if case .failed(let why) = await learn() { onFailure(why) }
        }
    }

    /// Learns now (or returns what was learnt before).
    package static func learn() async -> State {
        if case .learnt = state { return .learnt }
        let outcome = await asyncChainProbeOuter()
        return outcome
    }
}

// The probe: the outer function awaits the inner one, which suspends and then asks the C layer to
// read its own frame and context chain, where its caller must be the outer function's resume point.
// Neither may be inlined: the chain must have exactly these links.
@inline(never)
private func asyncChainProbeOuter() async -> AsyncChainLayout.State {
    let state = await asyncChainProbeInner()
    // Work after the call keeps it a real call with its own context (not a tail call).
    return state == .unknown ? .failed("no resumed async function was observed") : state
}

@inline(never)
private func asyncChainProbeInner() async -> AsyncChainLayout.State {
    // A yield always suspends: the code after it runs as a resumed partial function, called by the
    // runtime's job runner. A try that finds no runner caller (an executor that ran it inline) is
    // repeated after another suspension.
    for _ in 0..<4 {
        await Task.yield()
        var why: UnsafePointer<CChar>?
        switch sw_async_learn(1, &why) {
        case 1: return .learnt
        case 0: continue
        default: return .failed(why.map { String(cString: $0) } ?? "unknown reason")
        }
    }
    return .unknown
}
