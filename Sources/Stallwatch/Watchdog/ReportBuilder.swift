import CSampler
import StallwatchPolicy

/// Turns samples and facts into a ``StallReport``. Runs on the watchdog thread, after any held
/// threads are released: symbolization is only ever done here.
struct ReportBuilder {
    let configuration: WatchdogConfiguration
    let symbolizer: Symbolizer
    let sampler: StackSampler

    /// Function identity of every frame, so stacks compare by function, not by exact PC.
    func stackSample(_ stack: CapturedStack) -> StackSample {
        let frames = symbolizer.symbolize(stack).prefix(configuration.maxFrames).map { frame in
            FrameKey(pc: UInt64(frame.address), functionStart: frame.functionAddress.map(UInt64.init))
        }
        return StackSample(frames: Array(frames))
    }

    /// The same without a recovered leaf caller: for telling stalls apart (see
    /// ``CapturedStack/identityFrames``), never for blame.
    func identitySample(_ stack: CapturedStack) -> StackSample {
        var identity = stack
        identity.frames = stack.identityFrames
        identity.leafCallerRecovered = false
        return stackSample(identity)
    }

    func describe(_ key: FrameKey) -> SymbolInfo {
        let f = symbolizer.symbolize(UInt(key.address))
        return SymbolInfo(module: f.module, moduleOffset: f.moduleOffset.map(UInt64.init), buildID: f.buildID, symbol: f.symbol)
    }

    func identity(_ thread: ThreadID, info: ThreadInfo? = nil) -> ThreadIdentity {
        let name = info?.name ?? (try? ThreadInfo.read(thread).name) ?? ""
        return ThreadIdentity(id: thread.rawValue, name: name)
    }

    /// Stacks of the other threads, each captured on its own: running threads by signal, threads
    /// blocked in a system call from their kernel-reported SP/PC (no signal, no EINTR). Without
    /// `maySignal` (the signal is not ours), only blocked threads get a stack. Signal captures stop
    /// at `deadline`: on saturated CPUs each may wait its whole timeout, and other loops' detection
    /// waits meanwhile; threads past it are listed with their state and no stack.
    func otherThreads(except excluded: Set<ThreadID>, threads: [ThreadID], maySignal: Bool = true,
                      deadline: MonotonicInstant) -> [ThreadStack] {
        threads.filter { !excluded.contains($0) }.compactMap { tid in
            guard let info = try? ThreadInfo.read(tid) else { return nil }
            let left = deadline - MonotonicClock.now()
            let stack: CapturedStack?
            if info.syscall.blockedSyscall != nil || !maySignal {
                stack = try? sampler.captureBlockedStack(of: tid)
            } else if left >= .milliseconds(1) {
                stack = try? sampler.captureStack(of: tid, timeout: min(.milliseconds(20), left))
            } else {
                stack = nil
            }
            let frames = stack.map { s in
                symbolizer.symbolize(s).map { f in
                    ReportFrame(address: UInt64(f.address),
                                info: SymbolInfo(module: f.module, moduleOffset: f.moduleOffset.map(UInt64.init),
                                                 buildID: f.buildID, symbol: f.symbol),
                                sampleCount: 1)
                }
            } ?? []
            return ThreadStack(thread: identity(tid, info: info), state: String(info.state.procLetter),
                               syscall: info.syscall.blockedSyscall?.number, frames: frames)
        }
    }

    static func numaFacts(stalledThread: ThreadInfo?) -> NUMAFacts {
        let topology = NUMATopology.current()
        let nodes = topology.nodes.map {
            StallwatchPolicy.NUMANode(id: $0.id, cpus: $0.cpus, memoryBytes: UInt64(max($0.memoryBytes, 0)),
                                      freeBytes: UInt64(max($0.freeBytes, 0)))
        }
        return NUMAFacts(nodes: nodes, stalledThreadNode: stalledThread?.numaNode)
    }
}
