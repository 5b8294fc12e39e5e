import CSampler
import StallwatchPolicy
import StallwatchReport

/// Gathers what a report says beyond the stalled loop's samples, from the running process: thread
/// names, the other threads' states and stacks, the thread count, the NUMA topology. Kept apart
/// from ``ReportBuilder``, which only turns these facts into a report.
struct ReportFactsGatherer {
    let builder: ReportBuilder
    let sampler: StackSampler

    /// The name `thread` carries (`known` when the evidence already read it; "" when unreadable).
    func threadName(_ thread: ThreadID, known: String? = nil) -> String {
        known ?? (try? ThreadInfo.read(thread).name) ?? ""
    }

    /// ``threadName(_:known:)`` with the thread's id.
    func identity(_ thread: ThreadID, name known: String? = nil) -> ThreadIdentity {
        ThreadIdentity(id: thread.rawValue, name: threadName(thread, known: known))
    }

    /// The process's thread count now (0 when it cannot be listed).
    func threadCount() -> Int { (try? ThreadList.count()) ?? 0 }

    /// Stacks of the other threads, each captured on its own: running threads by signal, threads
    /// blocked in a system call from their kernel-reported SP/PC (no signal, no EINTR). Without
    /// `maySignal` (the signal is not ours), only blocked threads get a stack. Signal captures stop
    /// at `deadline`: on saturated CPUs each may wait its whole timeout, and other loops' detection
    /// waits meanwhile; threads past it are listed with their state and no stack.
    ///
    /// A running thread for which `stalledSample` has a stack (the newest sample of a watched loop
    /// stalled itself, see ``ThreadStack/stackAgeNanoseconds``) is not signalled: with many loops
    /// stalled at once on saturated CPUs, each signal waits until its thread gets a CPU, and the
    /// walk used the whole capture time before every round's first report.
    func otherThreads(except excluded: ThreadID, threads: [ThreadID], maySignal: Bool = true,
                      deadline: MonotonicInstant,
                      stalledSample: (ThreadID) -> CapturedStack? = { _ in nil }) -> [ThreadStack] {
        // One list, sized once (no filtered copy of the thread list first).
        var stacks: [ThreadStack] = []
        stacks.reserveCapacity(threads.count)
        for tid in threads where tid != excluded {
            if let stack = otherThread(tid, maySignal: maySignal, deadline: deadline, stalledSample: stalledSample) {
                stacks.append(stack)
            }
        }
        return stacks
    }

    /// One other thread's state and stack (see ``otherThreads(except:threads:maySignal:deadline:stalledSample:)``).
    func otherThread(_ tid: ThreadID, maySignal: Bool, deadline: MonotonicInstant,
                     stalledSample: (ThreadID) -> CapturedStack?) -> ThreadStack? {
        guard let info = ThreadGlance.read(tid) else { return nil }
        if info.syscall == nil, maySignal, let sample = stalledSample(tid) {
            // Borrowed from the loop's samples: its storage stays there.
            let now = MonotonicClock.now().nanoseconds
            return ThreadStack(thread: ThreadIdentity(id: tid.rawValue, name: info.name), state: String(info.state.procLetter),
                               syscall: nil, frames: builder.reportFrames(sample),
                               stackAgeNanoseconds: sample.takenAtNanoseconds.map { now > $0 ? now - $0 : 0 })
        }
        let left = deadline - MonotonicClock.now()
        var stack: CapturedStack?
        if info.syscall != nil || !maySignal {
            stack = try? sampler.captureBlockedStack(of: tid, reusing: builder.scratch.takeCapturedFrames())
        } else if left >= .milliseconds(1) {
            // Within the listing's deadline: no kernel sample after a signal that timed out.
            stack = try? sampler.captureStack(of: tid, unwinder: nil, timeout: min(.milliseconds(20), left), kernelSample: false)
        } else {
            stack = nil
        }
        let frames = stack.map(builder.reportFrames) ?? []
        // The raw frames are not kept in the report: their storage serves the next thread.
        if var kept = stack {
            stack = nil
            builder.scratch.giveBack(&kept)
        }
        return ThreadStack(thread: ThreadIdentity(id: tid.rawValue, name: info.name), state: String(info.state.procLetter),
                           syscall: info.syscall, frames: frames)
    }

    /// The machine's NUMA nodes now, and the node `stalledThread` last ran on.
    static func numaFacts(stalledThread: ThreadInfo?) -> NUMAFacts {
        let topology = NUMATopology.current()
        let nodes = topology.nodes.map {
            StallwatchReport.NUMANode(id: $0.id, cpus: $0.cpus, memoryBytes: UInt64(max($0.memoryBytes, 0)),
                                      freeBytes: UInt64(max($0.freeBytes, 0)))
        }
        return NUMAFacts(nodes: nodes, stalledThreadNode: stalledThread?.numaNode)
    }
}
