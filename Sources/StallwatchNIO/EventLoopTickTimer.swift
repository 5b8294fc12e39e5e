#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
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
/// start and end. The watchdog then never pings these loops: each ping period it checks whether a
/// tick ended since it last looked (the loop makes progress) and, if none did, reads the loop
/// thread's CPU clock and, only when that moved, its `/proc` syscall state — asleep in `epoll_wait`
/// is idle; running or blocked anywhere else is work that began after the last tick ended, watched
/// as a busy period until the next tick ends. An idle loop is never woken. When a stall is over,
/// its report gets the stalled tick's exact start and end. Work SwiftNIO does between ticks
/// (channel handlers run while it handles I/O, outside any tick) ends exactly where the next tick
/// starts; its start is placed between the last look that saw the loop free and the first that saw
/// it busy. Until a loop's first tick, it is pinged. Costs one lock, a few atomics and one
/// comparison per tick on top of SwiftNIO's own two clock reads.
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
    /// gets a `PingProbe` (named `<prefix>-0`, `<prefix>-1`, …) that is not pinged once its loop
    /// reports ticks (the watchdog looks at the loop's ticks and thread state instead, so an idle
    /// loop is never woken), and the loop's own tick times correct each stall's start and duration
    /// once it is over.
    ///
    /// - Returns: the probes, in the group's loop order.
    @discardableResult
    public func monitor(eventLoopGroup group: MultiThreadedEventLoopGroup, ticks: EventLoopTickTimer,
                        namePrefix: String = "nio-loop") -> [PingProbe] {
        group.makeIterator().enumerated().map { index, loop in
            let probe = PingProbe(name: "\(namePrefix)-\(index)", target: .tickingLoop(LoopTickRecord())) { job in
                loop.execute(job)
            }
            ticks.attach(probe, to: loop)
            monitor(probe)
            return probe
        }
    }
}
