import Glibc
import NIOCore
import NIOPosix
import Stallwatch
import Synchronization

/// Gives Stallwatch each event loop's exact tick times: pass it to the group when you create it,
/// then watch the group with ``Stallwatch/Watchdog/monitor(eventLoopGroup:ticks:namePrefix:)``.
///
/// ```swift
/// let ticks = EventLoopTickTimer()
/// let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount, metricsDelegate: ticks)
/// watchdog.monitor(eventLoopGroup: group, ticks: ticks)
/// ```
///
/// SwiftNIO calls ``processedTick(info:)`` on the loop's thread after every tick, with the tick's
/// start and end. A stall is still *detected* by the watchdog's ping (a tick that is still running
/// reports nothing); when it is over, its report gets the stalled tick's exact start and end rather
/// than the ping's view of it. Work SwiftNIO does between ticks (channel handlers run while it
/// handles I/O, outside any tick) ends exactly where the next tick starts; its start stays the
/// ping's. Costs one lock and one comparison per tick on top of SwiftNIO's own two clock reads.
public final class EventLoopTickTimer: NIOEventLoopMetricsDelegate, Sendable {
    private let next: (any NIOEventLoopMetricsDelegate)?
    private let probes = Mutex<[ObjectIdentifier: PingProbe]>([:])
    // NIODeadline counts from DispatchTime's origin; the watchdog's clock is CLOCK_MONOTONIC.
    private let offset: Int64

    /// A delegate that also passes every tick on to `next` (your own metrics, if any).
    public init(forwardingTo next: (any NIOEventLoopMetricsDelegate)? = nil) {
        self.next = next
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let monotonic = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
        self.offset = monotonic - Int64(clamping: NIODeadline.now().uptimeNanoseconds)
    }

    /// Called by SwiftNIO after each tick of a loop of the group this was given to.
    public func processedTick(info: NIOEventLoopTickInfo) {
        if let probe = probes.withLock({ $0[info.eventLoopID] }) {
            probe.recordTick(startNanoseconds: monotonic(info.startTime), endNanoseconds: monotonic(info.endTime))
        }
        next?.processedTick(info: info)
    }

    func attach(_ probe: PingProbe, to loop: any EventLoop) {
        probes.withLock { $0[ObjectIdentifier(loop)] = probe }
    }

    private func monotonic(_ deadline: NIODeadline) -> UInt64 {
        UInt64(clamping: Int64(clamping: deadline.uptimeNanoseconds) &+ offset)
    }
}

extension Watchdog {
    /// Watches every event loop of `group`, created with `ticks` as its metrics delegate: each loop
    /// gets a `PingProbe` (named `<prefix>-0`, `<prefix>-1`, …) that detects its stalls, and the
    /// loop's own tick times correct each stall's start and duration once it is over.
    ///
    /// - Returns: the probes, in the group's loop order.
    @discardableResult
    public func monitor(eventLoopGroup group: MultiThreadedEventLoopGroup, ticks: EventLoopTickTimer,
                        namePrefix: String = "nio-loop") -> [PingProbe] {
        group.makeIterator().enumerated().map { index, loop in
            let probe = PingProbe(name: "\(namePrefix)-\(index)") { job in loop.execute(job) }
            ticks.attach(probe, to: loop)
            monitor(probe)
            return probe
        }
    }
}
