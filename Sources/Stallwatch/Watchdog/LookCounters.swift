import Synchronization

/// What looks at one loop cost and found, for `bench` and tests: counts, robust to a noisy machine.
/// Written by the loop's watcher on the watchdog thread, read from any.
package final class LookCounters: Sendable {
    let looks = Atomic<UInt64>(0)
    let cpuClockReads = Atomic<UInt64>(0)
    let procReads = Atomic<UInt64>(0)
    let busy = Atomic<UInt64>(0)
    let pings = Atomic<UInt64>(0)

    /// The counts at one instant.
    package struct Snapshot: Sendable, Equatable {
        /// Looks taken in place of pings.
        package var looks: UInt64
        /// CPU clock reads of the loop thread.
        package var cpuClockReads: UInt64
        /// `/proc` reads of the loop thread.
        package var procReads: UInt64
        /// Looks that found the loop busy between ticks.
        package var busy: UInt64
        /// Real pings the watcher posted to the loop (before its first tick, or for a loop without
        /// ticks); the one posted when the loop is first monitored is not the watcher's.
        package var pings: UInt64
    }

    var snapshot: Snapshot {
        Snapshot(looks: looks.load(ordering: .relaxed), cpuClockReads: cpuClockReads.load(ordering: .relaxed),
                 procReads: procReads.load(ordering: .relaxed), busy: busy.load(ordering: .relaxed),
                 pings: pings.load(ordering: .relaxed))
    }
}
