import CSampler
import Foundation
import Glibc
import StallwatchReport
import Synchronization
import Testing
@testable import Stallwatch

/// A watchdog whose pool and loops all rest sleeps without a period (``IdleSleep``): no wake-up
/// while nothing happens, and still woken by a heartbeat probe's `busy()`, the pool's enqueue and
/// the process's CPU use.
@Suite("Idle sleep", .serialized)
struct IdleSleepTests {
    /// The watchdog thread's wake-ups (schedstat time slices) in each phase, run one after the
    /// other on a plain thread once the watchdog has not woken for 0.4 s (at most 8 s): the test's
    /// own task stays suspended (no pool job, no enqueue) until the thread resumes it, so the
    /// pool's rest, which the test's last enqueue ended, begins again and lasts. A phase runs its
    /// body, then waits its seconds.
    private func watchdogWakeups(of watchdog: Watchdog,
                                 phases: [(seconds: Double, body: @Sendable () -> Void)]) async throws -> [UInt64] {
        let tid = try #require(watchdog.threadID)
        return try await withCheckedThrowingContinuation { (done: CheckedContinuation<[UInt64], any Error>) in
            Thread {
                // Started from a pool worker, the thread has the worker's name: without its own,
                // the pool watcher takes it for a worker outside its wait, and the pool never rests.
                _ = sw_thread_set_name("idle-sleep-test")
                do {
                    // A pool given work in short bursts needs up to 32 quiet scans before it rests.
                    var last = try wakeups(of: tid)
                    for _ in 0..<20 {
                        usleep(400_000)
                        let now = try wakeups(of: tid)
                        if now == last { break }
                        last = now
                    }
                    var counts: [UInt64] = []
                    for phase in phases {
                        let before = try wakeups(of: tid)
                        phase.body()
                        usleep(UInt32(phase.seconds * 1_000_000))
                        counts.append(try wakeups(of: tid) - before)
                    }
                    done.resume(returning: counts)
                } catch {
                    done.resume(throwing: error)
                }
            }.start()
        }
    }

    private func startedWatchdog(threshold: Duration, log: EventLog, heartbeat: HeartbeatProbe? = nil) throws -> Watchdog {
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: threshold), metrics: nil) { log.append($0) }
        watchdog.monitor(PingProbe.cooperativePool())
        if let heartbeat { watchdog.monitor(heartbeat) }
        try watchdog.start()
        return watchdog
    }

    @Test("an idle watchdog (the pool and a heartbeat probe at rest) does not wake in 2 s")
    func noWakeupsWhileIdle() async throws {
        let log = EventLog()
        let probe = HeartbeatProbe(name: "idle-loop")
        let watchdog = try startedWatchdog(threshold: .milliseconds(300), log: log, heartbeat: probe)
        defer { watchdog.stop() }
        try await Task.sleep(for: .milliseconds(800))  // workers learnt, quiet scans, then the rest
        let wakes = try await watchdogWakeups(of: watchdog, phases: [(2, {})])[0]
        // Periodic rounds at an idle poll of 0.9 × threshold would be 7; one spare for a stray
        // enqueue of the test runner.
        #expect(wakes <= 1, "\(wakes) watchdog wake-ups in 2 s of an idle service")
        #expect(log.allStalls.isEmpty)
    }

    @Test("a heartbeat probe that turns busy while the watchdog sleeps is reported once, its start from its stamp")
    func heartbeatWakesTheWatchdog() async throws {
        let log = EventLog()
        let probe = HeartbeatProbe(name: "stalled-loop")
        let watchdog = try startedWatchdog(threshold: .milliseconds(300), log: log, heartbeat: probe)
        defer { watchdog.stop() }
        try await Task.sleep(for: .milliseconds(800))
        let started = Atomic<Int64>(0), busyFor = Atomic<Int64>(0)
        let wakes = try await watchdogWakeups(of: watchdog, phases: [(0.5, {}), (0.3, {
            // Stalls on the plain thread: busy 700 ms with the watchdog asleep.
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            started.store(Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec), ordering: .relaxed)
            probe.busy()
            usleep(700_000)
            probe.idle()
            var end = timespec()
            clock_gettime(CLOCK_REALTIME, &end)
            busyFor.store(Int64(end.tv_sec) * 1_000_000_000 + Int64(end.tv_nsec) - started.load(ordering: .relaxed), ordering: .relaxed)
        })])
        #expect(wakes[0] <= 1, "\(wakes[0]) wake-ups in 0.5 s before the stall: the watchdog was not asleep")
        try await Task.sleep(for: .milliseconds(300))
        let reports = log.stalls.filter { $0.loopName == "stalled-loop" }
        #expect(reports.count == 1, "\(reports.count) reports of the heartbeat loop's stall")
        let report = try #require(reports.first)
        let error = Double(report.startTimeUnixNanoseconds - started.load(ordering: .relaxed)) / 1e6
        // The probe's coarse clock: a few ms.
        #expect(abs(error) <= 20, "start off by \(error) ms")
        // Against the busy time the thread measured itself: a loaded machine stretches the sleep.
        let measured = Duration.nanoseconds(busyFor.load(ordering: .relaxed))
        #expect(log.ended.first.map { $0 >= .milliseconds(650) && $0 <= measured + .milliseconds(20) } == true,
                "ended after \(log.ended), busy for \(measured)")
        // Seen while it lasted (a report made from the probe's record after the stall ended has
        // the same bounds, but no sample).
        #expect(report.sampleCount >= 3, "\(report.sampleCount) samples: the stall was not seen while it lasted")
    }

    @Test("a process that starts using CPU wakes a sleeping watchdog within about half a second of it")
    func cpuUseWakesTheWatchdog() async throws {
        let log = EventLog()
        let watchdog = try startedWatchdog(threshold: .milliseconds(300), log: log)
        defer { watchdog.stop() }
        try await Task.sleep(for: .milliseconds(800))
        // Then the plain thread (no loop, no pool job) spins until it has used 1.5 s of CPU: 0.4 s
        // of the process's CPU per wake, however little of a core a loaded machine gives it.
        let wakes = try await watchdogWakeups(of: watchdog, phases: [(1, {}), (0, {
            var cpu = timespec()
            repeat { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) } while cpu.tv_sec < 1 || (cpu.tv_sec == 1 && cpu.tv_nsec < 500_000_000)
        })])
        let quiet = wakes[0], spun = wakes[1]
        #expect(quiet <= 1, "\(quiet) wake-ups in 1 s before the spin")
        // 0.4 s of CPU per wake while the process burns a core, then periodic rounds once a
        // reading shows it: at least 2.
        #expect(spun >= 2, "\(spun) wake-ups while the process spun 1.5 s")
        #expect(log.allStalls.isEmpty)
    }
}
