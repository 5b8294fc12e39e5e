import NIOCore
import NIOPosix
import Stallwatch
import StallwatchNIO

// Snippets of the documentation catalog's articles that no example holds: compiled here with the
// tests, never run. scripts/check-readme-snippets.py proves each article shows them verbatim.
enum DocSnippets {
    /// StallTiming.md and SwiftNIO.md: a group created with Stallwatch's tick timer.
    static func tickTimedGroup(watchdog: Watchdog) -> MultiThreadedEventLoopGroup {
        let ticks = EventLoopTickTimer()          // or EventLoopTickTimer(forwardingTo: yourDelegate)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount, metricsDelegate: ticks)
        watchdog.monitor(eventLoopGroup: group, ticks: ticks)
        return group
    }
}
