import CSampler
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Stallwatch
import Synchronization

/// The scheduler's floor for a watchdog among busy threads: a thread at the watchdog's nice value
/// that does nothing but sleep `period` and note how late it woke. Whatever the watchdog adds on
/// top of this (its round's CPU at its weighted share) is its own.
final class WakeLatenessProbe: Sendable {
    private let stop = Atomic<Bool>(false)
    private let done = Atomic<Bool>(false)
    private let lateness = Mutex<[Double]>([])

    /// Starts the sleeper at `nice` (the watchdog's ``WatchdogPriority``: -10), waking every `period`.
    init(nice: Int32 = -10, period: Duration = .milliseconds(40)) {
        let periodNanoseconds = Int(period.components.seconds) * 1_000_000_000 + Int(period.components.attoseconds / 1_000_000_000)
        let thread = Thread { [self] in
            ThreadPriority.setNice(nice, thread: sw_current_tid())
            var late: [Double] = []
            late.reserveCapacity(4096)
            while !stop.load(ordering: .acquiring) {
                let target = Workload.now() + periodNanoseconds
                var ts = timespec(tv_sec: periodNanoseconds / 1_000_000_000, tv_nsec: periodNanoseconds % 1_000_000_000)
                _ = nanosleep(&ts, nil)
                late.append(Double(Workload.now() - target) / 1e6)
            }
            lateness.withLock { $0 = late }
            done.store(true, ordering: .releasing)
        }
        thread.stackSize = 256 * 1024
        thread.start()
    }

    /// Stops the sleeper and returns its wake lateness, ms, one per wake.
    func finish() -> [Double] {
        stop.store(true, ordering: .releasing)
        while !done.load(ordering: .acquiring) { usleep(5000) }
        return lateness.withLock { $0 }
    }
}
