import NIOCore
import Stallwatch

extension Watchdog {
    /// Watches every event loop of `group` with its own `PingProbe` (named `<prefix>-0`,
    /// `<prefix>-1`, …): the watchdog posts a tiny task on each loop every round, and a loop whose
    /// task has not run after the threshold is stalled — whatever a channel handler does on it.
    ///
    /// ```swift
    /// let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
    /// watchdog.monitor(eventLoopGroup: group)
    /// ```
    ///
    /// - Returns: the probes, in the group's loop order (to read `PingProbe.lastLatency` or to
    ///   unmonitor them).
    @discardableResult
    public func monitor(eventLoopGroup group: any EventLoopGroup, namePrefix: String = "nio-loop") -> [PingProbe] {
        group.makeIterator().enumerated().map { index, loop in
            let probe = PingProbe(name: "\(namePrefix)-\(index)") { job in loop.execute(job) }
            monitor(probe)
            return probe
        }
    }
}
