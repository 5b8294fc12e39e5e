import Foundation
import Glibc
import StallwatchReport
import Testing
@testable import Stallwatch

/// A pool job that writes and fsyncs a file in a loop: short CPU bursts between short blocking
/// calls, about 40 % of a core. No scan's rule fired for it before: it was never on the CPU for half
/// an interval (no signal), and its blocked stacks were often read after the thread had moved on.
/// The stall matrix's `fsync` injection (Examples/BlockingWork's `fsyncStorm`, a target of the
/// examples package, which the tests do not depend on), repeated here so the unit tests catch it.
@inline(never) func mixedJobFixtureFsyncStorm(milliseconds: Int) {
    let path = NSTemporaryDirectory() + "stallwatch-test-fsync-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { return }
    defer { close(fd); unlink(path) }
    let block = [UInt8](repeating: 7, count: 4096)
    let end = ContinuousClock.now + .milliseconds(milliseconds)
    while ContinuousClock.now < end {
        _ = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        _ = fsync(fd)
    }
}

@Suite("Pool jobs that mix CPU and blocking calls", .serialized)
struct MixedPoolJobTests {
    @Test("fsync storms at 1.2 × the threshold on the pool: each reported once, its start and duration right")
    func fsyncStormsAreReported() async throws {
        let threshold = Duration.milliseconds(300)
        let log = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: threshold), metrics: nil) { log.append($0) }
        try watchdog.start()
        defer { watchdog.stop() }
        var timings: [StallTiming] = []
        for _ in 0..<8 {
            try await Task.sleep(for: .milliseconds(Int.random(in: 200...400)))
            let timing = StallTiming()
            await Task.detached {
                timing.begin()
                mixedJobFixtureFsyncStorm(milliseconds: 360)
                timing.finish()
            }.value
            timings.append(timing)
        }
        try await Task.sleep(for: .milliseconds(400))
        let reports = log.allStalls.filter { $0.loopName == PoolJobWatcher.loopName }
        for timing in timings {
            let start = try #require(timing.start), duration = try #require(timing.duration)
            let startNs = MonotonicClock.unixNanoseconds(ofMonotonic: start)
            let matching = reports.filter {
                $0.startTimeUnixNanoseconds < startNs + duration.clampedNanoseconds
                    && $0.startTimeUnixNanoseconds + $0.durationNanoseconds > startNs
            }
            #expect(matching.count == 1, "a \(duration) fsync storm matched \(matching.count) reports")
            if let report = matching.first {
                expectStart(of: report, at: start)
            }
        }
    }
}
