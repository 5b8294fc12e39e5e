import CSampler
import StallwatchReport

/// The stack of one thread at one moment: raw return addresses, innermost first.
///
/// Addresses are kept raw so a stack can be symbolized later, elsewhere (see ``Symbolizer``).
package struct CapturedStack: Sendable, Hashable, Codable {
    /// The thread the stack belongs to.
    package var thread: ThreadID
    /// `frames[0]` is the interrupted program counter; the rest are return addresses, outermost last.
    package var frames: [UInt]
    /// The unwinder that produced the frames.
    package var unwinder: Unwinder
    /// `true` when the walk stopped before the thread's first frame; ``walkEnd`` says why.
    package var truncated: Bool
    /// Why the walk ended; `nil` for a stack decoded from an older encoding.
    package var walkEnd: StackEnd?
    /// Frames found through unwind tables (`.eh_frame`: code built without frame pointers, and the
    /// interrupted frame itself) rather than frame records.
    package var tableFrames: Int = 0
    /// `false` when the thread's stack bounds were unknown, so only the program counter was taken.
    package var stackBoundsKnown: Bool
    /// The interrupted stack pointer.
    package var stackPointer: UInt
    /// Time the signal handler spent capturing (zero when no signal was used).
    package var handlerTime: Duration
    /// From sending the request to seeing the answer (zero when no signal was used).
    package var latency: Duration
    /// Whether `frames[1]` (the leaf's caller) was recovered from the words above the stack
    /// pointer rather than read from a frame record: a well-checked guess, but a guess.
    package var leafCallerRecovered: Bool = false
    /// The request the interrupted code served (``StallAttribution``'s tag, read by the signal
    /// handler from the thread's current task); `nil` when none or when no handler ran.
    var requestTag: UInt64?
    /// What took the sample: the signal's handler (a request, the timer ring) or the kernel (a perf
    /// event); `nil` for a stack made by hand or decoded from an older encoding.
    package var driver: SamplingDriver?
    /// When the capture began (CLOCK_MONOTONIC, ns); `nil` when not known (a stack made by hand or
    /// decoded from an older encoding).
    package var takenAtNanoseconds: UInt64?
    /// The frames read from a Swift task's chain of async contexts: the callers of the async
    /// function that frame `asyncFrames.lowerBound - 1` runs, which are no longer on the machine
    /// stack once it resumed after an `await`. Each is its resume function's entry + 1, so that it
    /// is symbolized like a return address. `nil` when the stack has none.
    package var asyncFrames: Range<Int>?
    /// How the async chain ended; `nil` when the walk met no async function.
    package var asyncEnd: AsyncChainEnd?
    /// The Swift task the thread ran, read by the signal handler (id, `TaskPriority` raw value).
    package var task: SampledTask?

    /// Creates a stack value (mostly for tests and decoding).
    package init(thread: ThreadID, frames: [UInt], unwinder: Unwinder, truncated: Bool = false,
                stackBoundsKnown: Bool = true, stackPointer: UInt = 0,
                handlerTime: Duration = .zero, latency: Duration = .zero) {
        self.thread = thread
        self.frames = frames
        self.unwinder = unwinder
        self.truncated = truncated
        self.stackBoundsKnown = stackBoundsKnown
        self.stackPointer = stackPointer
        self.handlerTime = handlerTime
        self.latency = latency
    }

    init(_ raw: UnsafePointer<sw_stack_t>) {
        self.init(raw, reusing: [])
    }

    /// A stack from the C layer whose frames are written into `storage` (emptied first): storage
    /// kept from an older sample makes the copy allocation-free.
    init(_ raw: UnsafePointer<sw_stack_t>, reusing storage: consuming [UInt]) {
        let count = Int(min(raw.pointee.count, UInt32(SW_MAX_FRAMES)))
        var frames = storage
        frames.removeAll(keepingCapacity: true)
        frames.reserveCapacity(count)
        withUnsafeBytes(of: raw.pointee.frames) { bytes in
            for address in bytes.bindMemory(to: UInt64.self).prefix(count) { frames.append(UInt(address)) }
        }
        self.init(
            thread: ThreadID(rawValue: raw.pointee.tid),
            frames: frames,
            unwinder: Unwinder(c: raw.pointee.unwinder) ?? .framePointer,
            truncated: raw.pointee.truncated != 0,
            stackBoundsKnown: raw.pointee.stack_known != 0,
            stackPointer: UInt(raw.pointee.sp),
            handlerTime: .nanoseconds(Int64(clamping: raw.pointee.handler_ns)),
            latency: .nanoseconds(Int64(clamping: raw.pointee.latency_ns))
        )
        self.leafCallerRecovered = raw.pointee.leaf_caller_recovered != 0
        self.walkEnd = StackEnd(c: raw.pointee.stop_reason)
        self.tableFrames = Int(raw.pointee.table_frames)
        self.requestTag = raw.pointee.request_tag == 0 ? nil : raw.pointee.request_tag
        self.driver = Int32(raw.pointee.driver) == Int32(SW_DRIVER_PERF) ? .perfEvent : .timerSignal
        self.takenAtNanoseconds = raw.pointee.taken_at_ns == 0 ? nil : raw.pointee.taken_at_ns
        self.asyncEnd = AsyncChainEnd(c: raw.pointee.async_end)
        if raw.pointee.task_id != 0 { self.task = SampledTask(id: raw.pointee.task_id, priority: raw.pointee.task_priority) }
        let asyncAt = Int(raw.pointee.async_at), asyncCount = Int(raw.pointee.async_count)
        if asyncCount > 0, asyncAt > 0, asyncAt + asyncCount <= count {
            self.asyncFrames = asyncAt ..< asyncAt + asyncCount
        }
    }

    /// The samples of `stacks` taken until `end` (those without a capture time too), without a
    /// copy: a stall's samples. One taken after the stall ended shows the thread's next work (an
    /// event loop's idle wait, the next request), and blamed it when the stall itself gave few.
    static func taken<C: Collection<CapturedStack>>(_ stacks: C, until end: MonotonicInstant) -> LazyFilterSequence<C> {
        stacks.lazy.filter { ($0.takenAtNanoseconds ?? 0) <= end.nanoseconds }
    }

    /// The frames on the machine stack: ``frames`` without the async ones.
    var machineFrames: [UInt] {
        guard let asyncFrames else { return frames }
        return Array(frames[..<asyncFrames.lowerBound]) + frames[asyncFrames.upperBound...]
    }

    /// The task most of `stacks` ran, with how many ran it (its newest priority); `nil` when none
    /// was read.
    static func mostSampledTask(of stacks: some Collection<CapturedStack>) -> ReportTask? {
        var counts: [UInt64: ReportTask] = [:]
        for s in stacks {
            guard let t = s.task else { continue }
            counts[t.id, default: ReportTask(id: t.id, priority: t.priority, sampleCount: 0)].sampleCount += 1
            counts[t.id]?.priority = t.priority
        }
        return counts.values.max { ($0.sampleCount, $1.id) < ($1.sampleCount, $0.id) }
    }

    /// Samples whose walk ended early, counted by why; `nil` when every walk reached its root.
    static func earlyEnds(of stacks: some Collection<CapturedStack>) -> [String: Int]? {
        // Most stalls have none: no dictionary then.
        guard stacks.contains(where: { !$0.isWhole || $0.asyncEnd.map { !$0.isWhole } == true }) else { return nil }
        var ends: [String: Int] = [:]
        for s in stacks where !s.isWhole { ends[(s.walkEnd ?? .badLink).name, default: 0] += 1 }
        for s in stacks { if let end = s.asyncEnd, !end.isWhole { ends[end.name, default: 0] += 1 } }
        return ends.isEmpty ? nil : ends
    }

    /// `true` when the walk is known to have reached the thread's first frame. A stack whose walk
    /// failed is never taken for a short, meaningless one.
    package var isWhole: Bool { walkEnd?.isWhole ?? !truncated }

    /// The frames that identify a stall: without the leaf PC and without a recovered leaf caller.
    /// Where a CPU-bound loop's PC lands (in the loop, or in a frameless helper it calls, whose
    /// caller is then recovered, or not) changes from sample to sample; the frames from the first
    /// frame record outwards do not, so one stall is not taken for two.
    var identityFrames: [UInt] { Array(identityFrameSlice) }

    /// ``identityFrames`` without a copy.
    var identityFrameSlice: ArraySlice<UInt> {
        guard frames.count > 1 else { return frames[...] }
        return frames.dropFirst(leafCallerRecovered && frames.count > 2 ? 2 : 1)
    }
}

/// A Swift task as a signal handler read it on the thread running it.
package struct SampledTask: Hashable, Sendable, Codable {
    /// The runtime's task id.
    package var id: UInt64
    /// `TaskPriority.rawValue` when sampled.
    package var priority: UInt8
}
