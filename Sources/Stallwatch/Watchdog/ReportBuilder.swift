import CSampler
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import StallwatchPolicy
import StallwatchReport

/// Turns samples and facts into a ``StallReport``: every report the watchdog makes is made here,
/// from values only. What a report says of the process and its other threads is gathered before
/// (``ReportFactsGatherer``, ``RoundFacts``): nothing here reads `/proc` or captures a stack.
/// Runs on the watchdog thread, after any held threads are released.
struct ReportBuilder {
    let configuration: WatchdogConfiguration
    let symbolizer: Symbolizer
    /// Reused trees and key buffers (the watchdog thread's only).
    let scratch = StackScratch()
    /// Deadlocks already reported, so that a cycle's other threads do not report it again.
    let deadlocks = DeadlockLedger()

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

    /// ``stackSample(_:)``'s keys (`identity`: ``identitySample(_:)``'s) into `keys`, each distinct
    /// address looked up once per tree (``key(of:innermost:)``): nothing is allocated for a known
    /// stack.
    func functionKeys(of stack: CapturedStack, identity: Bool, into keys: inout [FrameKey]) {
        keys.removeAll(keepingCapacity: true)
        let frames = identity ? stack.identityFrameSlice : stack.frames[...]
        for (i, a) in frames.prefix(configuration.maxFrames).enumerated() {
            keys.append(key(of: a, innermost: i == 0))
        }
    }

    /// The function key of the frame at `address` (`innermost`: its stack's first frame). The
    /// address is looked up where ``ReturnAddress`` says, once per tree: the frame found is kept in
    /// `scratch.resolved`, and what the report says of its key in `scratch.frames`, so that the
    /// tree's nodes and blamed stack need no second lookup.
    private func key(of address: UInt, innermost: Bool) -> FrameKey {
        let at = ReturnAddress.lookup(address, innermost: innermost)
        let frame: SymbolizedFrame
        if let known = scratch.resolved[at] {
            frame = known
        } else {
            frame = symbolizer.symbolize(at)
            scratch.resolved[at] = frame
        }
        let key = FrameKey(pc: UInt64(address), functionStart: frame.functionAddress.map(UInt64.init))
        if !scratch.frames.contains(key) { scratch.frames[key] = Self.info(of: key, from: frame, lookedUpAt: at) }
        return key
    }

    /// What a report says of `key` (its function's start, or the frame's own address when the
    /// function is unknown), from `frame`, looked up at `at` in the same function: the same names,
    /// the module offset moved from `at` to the key, as a lookup at the key itself gives it.
    static func info(of key: FrameKey, from frame: SymbolizedFrame, lookedUpAt at: UInt) -> SymbolInfo {
        var info = frame.info
        let shift = key.address &- UInt64(at)
        info.moduleOffset = frame.moduleOffset.map { ReportAddress(UInt64($0) &+ shift) }
        return info
    }

    /// Empties `scratch.tree` and what was resolved for the tree before.
    private func startTree() {
        scratch.tree.removeAll()
        scratch.leaves.removeAll(keepingCapacity: true)
        scratch.resolved.removeAll(keepingCapacity: true)
        scratch.frames.removeAll()
    }

    /// The call tree of `samples` into `scratch.tree` (emptied first), by ``stackSample(_:)``'s
    /// keys, or ``identitySample(_:)``'s with `identity`; its frames named in `scratch.frames`.
    func buildTree(of samples: some Collection<CapturedStack>, identity: Bool = false) {
        startTree()
        for (index, stack) in samples.enumerated() {
            functionKeys(of: stack, identity: identity, into: &scratch.keys)
            if let leaf = scratch.tree.add(leafFirst: scratch.keys, index: index) {
                scratch.leaves.append((leaf, stack.takenAtNanoseconds))
            }
        }
        symbolizer.releaseMappedPages()
    }

    /// The tree of one path of function keys (root first) into `scratch.tree`: keys with no frame
    /// behind them, each looked up at its own address, once.
    private func buildTree(ofPath rootFirst: [FrameKey]) {
        startTree()
        scratch.tree.add(leafFirst: rootFirst.reversed(), index: 0)
        scratch.tree.forEachFrame { key in
            if !scratch.frames.contains(key) { scratch.frames[key] = symbolizer.symbolize(UInt(key.address)).info }
        }
        symbolizer.releaseMappedPages()
    }

    /// `scratch.tree` as a report gives it: the blamed stack and the flat nodes, named from
    /// `scratch.frames`.
    private func treeInReport() -> (blamedStack: [ReportFrame], callTree: [ReportCallTreeNode]) {
        let blamed = ReportFrame.blamedStack(of: scratch.tree, frames: scratch.frames)
        return (blamed, ReportCallTreeNode.flatten(&scratch.tree, frames: scratch.frames))
    }

    /// Gives each leaf of `nodes` (``treeInReport()``'s, from `scratch.tree`) its samples' times
    /// as offsets from `start` (Unix ns); a leaf with any untimed sample gets none.
    private func timeSamples(_ nodes: inout [ReportCallTreeNode], start: Int64) {
        var untimed = Set<Int>()
        // One reading of both clocks for every sample: their offsets differ by their times only.
        let unixAtMonotonicZero = MonotonicClock.unixNanoseconds(ofMonotonic: MonotonicInstant(nanoseconds: 0))
        for (node, takenAt) in scratch.leaves {
            let at = scratch.tree.preorderNumber(ofNode: node)
            guard nodes.indices.contains(at) else { continue }
            guard let takenAt, takenAt <= UInt64(Int64.max) else {
                untimed.insert(at)
                continue
            }
            let offset = unixAtMonotonicZero &+ Int64(takenAt) &- start
            if nodes[at].sampleOffsetsNanoseconds == nil { nodes[at].sampleOffsetsNanoseconds = [] }
            nodes[at].sampleOffsetsNanoseconds?.append(offset)
        }
        for at in untimed { nodes[at].sampleOffsetsNanoseconds = nil }
    }

    /// A stack's frames as a report lists them (one array: no intermediate list of symbolized
    /// frames), each looked up as ``Symbolizer/symbolize(_:innermost:)`` does.
    func reportFrames(_ stack: CapturedStack) -> [ReportFrame] {
        defer { symbolizer.releaseMappedPages() }
        var out: [ReportFrame] = []
        out.reserveCapacity(stack.frames.count)
        for (i, a) in stack.frames.enumerated() {
            let f = symbolizer.symbolize(a, innermost: i == 0)
            out.append(ReportFrame(address: UInt64(a), info: f.info, sampleCount: 1))
        }
        return out
    }

    // MARK: - reports

    /// A stack's call tree, the blamed path and the flattened tree, filled into `report`.
    func fill(_ report: inout StallReport, samples: some Collection<CapturedStack>) {
        buildTree(of: samples)
        report.sampleCount = scratch.tree.sampleCount
        (report.blamedStack, report.callTree) = treeInReport()
        timeSamples(&report.callTree, start: report.startTimeUnixNanoseconds)
        report.truncatedSampleCount = samples.count { !$0.isWhole }
        report.stackEnds = CapturedStack.earlyEnds(of: samples)
        report.asyncCallersMissing = AsyncChainLayout.missingCallers(in: report.blamedStack)
        report.task = CapturedStack.mostSampledTask(of: samples)
        // A request once named is kept when a later version cannot name it (its tag forgotten).
        if let attributed = StallAttribution.request(for: samples) { report.request = attributed.request }
    }

    /// What one stall report says beyond its samples.
    struct StallFacts {
        var loopName: String
        /// `nil` for a pinged loop whose thread is not known yet: no ping had run on it.
        var thread: ThreadID?
        /// The thread's name, as gathered ("" when it could not be read).
        var threadName: String = ""
        var start: MonotonicInstant
        var elapsed: Duration
        var cause: StallCause
        var evidence: (evidence: ThreadEvidence, info: StalledThreadRead?)?
        var round: RoundFacts
        var processCPUPercent: Double
        var counters: ReportCounters
        var lateness: Duration
        var sampling: SamplingFacts?
        /// What a lock-waiting thread waits on, and its holder.
        var lockWait: LockWaitFacts? = nil
    }

    /// The first version of a stall episode's report.
    func stallReport(id: String, _ f: StallFacts, samples: some Collection<CapturedStack>) -> StallReport {
        let known = f.thread.map { ThreadIdentity(id: $0.rawValue, name: f.threadName) }
        let e = f.evidence?.evidence
        var report = StallReport(
            kind: .stall,
            id: id,
            cause: f.cause,
            loopName: f.loopName,
            thread: known,
            startTimeUnixNanoseconds: MonotonicClock.unixNanoseconds(ofMonotonic: f.start),
            duration: f.elapsed,
            durationIsFinal: false,
            otherThreads: f.round.otherThreads?.filter { $0.thread.id != f.thread?.rawValue },
            threadCount: f.round.threadCount,
            threadCPU: e.flatMap { e in
                known.map { [ThreadCPUUsage(thread: $0, cpuPercent: e.wallDelta > .zero ? e.cpuTimeDelta / e.wallDelta * 100 : 0)] }
            } ?? [],
            process: f.round.process.map { ProcessFacts(cpuPercent: f.processCPUPercent, residentBytes: $0.residentBytes,
                                                        cores: OnlineCPUs.count) },
            numa: f.round.numa(node: f.evidence?.info?.numaNode),
            configuration: configuration,
            counters: f.counters,
            watchdogLateness: f.lateness)
        report.sampling = f.sampling
        report.lockWait = f.lockWait
        fill(&report, samples: samples)
        return report
    }

    /// The next version of an episode's report (same id): the stall so far, or its end when `final`.
    /// A cause already stated is kept unless `cause` is given (evidence taken during the stall).
    func updated(_ report: StallReport, start: MonotonicInstant, duration: Duration, final: Bool,
                 samples: some Collection<CapturedStack>, cause: StallCause? = nil) -> StallReport {
        var next = report
        next.sequenceInStall += 1
        next.startTimeUnixNanoseconds = MonotonicClock.unixNanoseconds(ofMonotonic: start)
        next.durationNanoseconds = duration.clampedNanoseconds
        next.durationIsFinal = final
        // A lock wait's holder stays said while the stall still waits on a lock.
        if let cause { next.cause = next.lockWait.map { cause.kind == .lockWait ? Self.cause(cause, with: $0) : cause } ?? cause }
        // A report made before any sample keeps its empty tree only while there is still none.
        if !samples.isEmpty { fill(&next, samples: samples) }
        return next
    }

    /// A ping-probed loop busy without stalling (``BusyLoopDetector``).
    func busyLoopReport(id: String, loopName: String, thread: ThreadIdentity, busyFor: Duration, demandPercent: Int,
                        path: StackSignature, count: Int, now: MonotonicInstant, lateness: Duration,
                        threadCount: Int) -> StallReport {
        buildTree(ofPath: path.frames)
        let tree = treeInReport()
        return StallReport(
            kind: .busyLoop,
            id: id,
            cause: StallCause(kind: .cpuBound,
                              evidence: "busy for \(busyFor) without a stall (wanted a core \(demandPercent) % of the last round), the same stack in more than half of \(count) samples"),
            loopName: loopName,
            thread: thread,
            startTimeUnixNanoseconds: MonotonicClock.unixNanoseconds(ofMonotonic: now - busyFor),
            duration: busyFor,
            durationIsFinal: false,
            sampleCount: count,
            blamedStack: tree.blamedStack,
            callTree: tree.callTree,
            threadCount: threadCount,
            configuration: configuration,
            watchdogLateness: lateness)
    }

    /// A feedback counter that crossed its threshold within one busy period.
    func feedbackReport(id: String, loopName: String, crossing: FeedbackCrossing, since: MonotonicInstant,
                        thread: ThreadIdentity?, lateness: Duration, threadCount: Int) -> StallReport {
        buildTree(of: crossing.stack.map { [$0] } ?? [])
        let sampleCount = scratch.tree.sampleCount
        let tree = treeInReport()
        var report = StallReport(
            kind: .feedbackLoop,
            id: id,
            cause: StallCause(kind: .cpuBound,
                              evidence: "\"\(crossing.key)\" came round \(crossing.count) times in one busy period (threshold \(crossing.threshold))"),
            loopName: loopName,
            thread: thread,
            startTimeUnixNanoseconds: MonotonicClock.unixNanoseconds(ofMonotonic: since),
            duration: crossing.at > since ? crossing.at - since : .zero,
            durationIsFinal: false,
            sampleCount: sampleCount,
            blamedStack: tree.blamedStack,
            callTree: tree.callTree,
            threadCount: threadCount,
            configuration: configuration,
            watchdogLateness: lateness)
        report.feedback = FeedbackFacts(key: crossing.key, count: crossing.count, threshold: crossing.threshold)
        return report
    }

    /// A CPU policy event: process CPU high now, or high for long.
    func cpuReport(id: String, event: CPUEvent, windowStart: MonotonicInstant, wall: Duration, now: MonotonicInstant,
                   cores: Int, threadCount: Int, threadsUnread: String? = nil) -> StallReport {
        switch event {
        case .processCPUHigh(let usage, let top):
            // A CPU-high report that names fewer threads than it could says why.
            let gap = threadsUnread.map { "; \(top.isEmpty ? "no thread named" : "threads named in part"): \($0)" } ?? ""
            return StallReport(
                kind: .cpuHigh, id: id,
                cause: StallCause(kind: .cpuUsage, evidence: "process CPU \(Int(usage * 100)) % of one core on \(cores) cores\(gap)"),
                startTimeUnixNanoseconds: MonotonicClock.unixNanoseconds(ofMonotonic: windowStart),
                duration: wall, durationIsFinal: true, threadCount: threadCount,
                threadCPU: top.map { ThreadCPUUsage(thread: ThreadIdentity(id: $0.threadID, name: $0.name),
                                                    cpuPercent: $0.fraction * 100) },
                configuration: configuration)
        case .sustainedHigh(let average, let duration):
            let start = MonotonicInstant(nanoseconds: now.nanoseconds &- UInt64(max(duration.clampedNanoseconds, 0)))
            return StallReport(
                kind: .cpuSustained, id: id,
                cause: StallCause(kind: .cpuUsage, evidence: "process CPU averaged \(Int(average * 100)) % of one core for \(duration)"),
                startTimeUnixNanoseconds: MonotonicClock.unixNanoseconds(ofMonotonic: start),
                duration: duration, durationIsFinal: true, threadCount: threadCount,
                configuration: configuration)
        }
    }
}

/// Facts shared by every report of one round, gathered once: with many loops stalled at once,
/// walking every thread per report would delay the detection of the rest.
struct RoundFacts {
    var at: MonotonicInstant
    var threadCount: Int
    var otherThreads: [ThreadStack]?
    var process: ProcessStats?
    var topology: [StallwatchReport.NUMANode]

    func numa(node stalledThreadNode: Int?) -> NUMAFacts {
        NUMAFacts(nodes: topology, stalledThreadNode: stalledThreadNode)
    }
}
