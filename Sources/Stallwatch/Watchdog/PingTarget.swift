/// What a ``PingProbe`` posts its pings to, as far as the watchdog watches it by more than pings.
package enum PingTarget: Sendable {
    /// An executor, queue or event loop that only answers pings.
    case executor
    /// The Swift concurrency cooperative pool: while one of its workers waits for work, the pool is
    /// known free from that worker's thread and is not pinged (``PingedLoopWatcher/lookAtPool(_:)``).
    case cooperativePool
    /// An event loop that reports its ticks into `record`: looked at, not pinged, once it does.
    case tickingLoop(LoopTickRecord)

    /// The record the loop's ticks go to, if it reports them.
    var tickRecord: LoopTickRecord? {
        if case .tickingLoop(let record) = self { return record }
        return nil
    }

    /// Whether the target is the cooperative pool.
    var isCooperativePool: Bool {
        if case .cooperativePool = self { return true }
        return false
    }
}
