import CSampler
import Synchronization

/// Reading the request tag of a thread blocked in a system call, which is never signalled (a signal
/// would end its sleep or read with `EINTR`): the watchdog reads the thread's current task and that
/// task's task-local list from outside (CSampler's `blocked_task.c`). The offsets this needs are
/// private to glibc and to the Swift runtime, so they are learned here, in the first requests:
/// inside the request's task, with two nested bindings of the tag to marker values whose places
/// are then found. Learning ends after two agreeing observations, or fails with a reason the
/// watchdog reports once as an `error` event (then blocked threads name no request; nothing else
/// changes).
enum BlockedRequestTags {
    /// 0 while learning, 1 learned, -1 failed: `serving` stops observing once it is not 0.
    private static let state = Atomic<Int>(0)
    /// Marker values: far above any tag the registry hands out, and new on every observation so a
    /// stale item of an earlier one is never taken for the binding just made.
    private static let nextMarker = Atomic<UInt64>(0xB10C_7A60_0000_0000)

    /// One learning step, if learning is still going on. Cheap once it is over (one atomic load).
    static func observeIfLearning() {
        guard state.load(ordering: .relaxed) == 0 else { return }
        let outer = nextMarker.wrappingAdd(2, ordering: .relaxed).oldValue
        let result = StallAttribution.$tag.withValue(outer) {
            StallAttribution.$tag.withValue(outer + 1) { sw_task_layout_observe(outer, outer + 1) }
        }
        if result != 0 { state.store(Int(result), ordering: .relaxed) }
    }

    /// Why blocked threads' requests cannot be read, once learning failed; `nil` otherwise.
    static var failure: String? {
        var why: UnsafePointer<CChar>?
        guard sw_blocked_tag_state(&why) < 0 else { return nil }
        return "blocked threads' requests are not named: " + (why.map { String(cString: $0) } ?? "unknown reason")
    }

    /// Whether blocked threads' requests are readable now.
    static var isReady: Bool { sw_blocked_tag_state(nil) == 1 }

    /// How many blocked threads' tags were read so far (a tag found and kept).
    static var tagsRead: UInt64 {
        var tagged: UInt64 = 0
        sw_blocked_tag_stats(nil, &tagged, nil)
        return tagged
    }
}
