import ArgumentParser
import BenchSupport
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What `bench workload` measured, as JSON for the parent `bench sampler`.
struct WorkloadReport: Codable {
    var iterations: Int
    var wallNanoseconds: Int
    var gapStolenNanoseconds: Int
    var typicalIterationNanoseconds: Int
    /// SIGPROF deliveries to the workload thread during the window (the peer profiler's samples).
    var profilerSignals: Int
    /// SIGPROF deliveries to other threads of the process during the window.
    var otherThreadSignals: Int
    /// Whether a SIGPROF handler was installed before ours (the peer profiler was active).
    var profilerActive: Bool
    /// Per matched sample: enclosing gap minus a typical iteration, ns.
    var stolenPerSample: [Int]
    /// Per matched sample: gap end − handler start, ns (our recorder runs first, then the profiler's handler).
    var stolenTail: [Int]
    var belowThreshold: Int
}

/// `bench workload`: only the workload, for a peer profiler loaded into this process at start.
struct WorkloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "workload",
        abstract: "Run only the workload and print its figures (used by `bench sampler --peer`).",
        shouldDisplay: false
    )

    @Option(help: "Length of the measured window in seconds.")
    var seconds: Double = 2

    @Option(help: "Stack depth of the workload.")
    var depth: Int = 32

    @Option(name: .customLong("working-set-mib"), help: "Working set the workload touches, MiB (0: none).")
    var workingSetMiB: Int = 0

    @Flag(help: "Print the figures as JSON.")
    var json = false

    func validate() throws {
        guard seconds > 0, seconds <= 600 else { throw ValidationError("--seconds must be in (0, 600], got \(seconds)") }
        guard depth >= 1, depth <= 200 else { throw ValidationError("--depth must be in 1...200, got \(depth)") }
    }

    func run() throws {
        let workload = Workload(depth: depth, threads: 1, workingSetBytes: workingSetMiB << 20)
        workload.start()
        guard let worker = workload.workers.first else { throw BenchError("no workload thread") }
        // Find the workload thread's pthread_t: record SIGPROF deliveries on it, chain to the peer.
        let target = worker.pthread.load(ordering: .acquiring)
        let capacity = Int(seconds * 1000) + 1000 // up to 1 kHz
        let rc = bench_sigprof_recorder_install(target, UInt32(capacity))
        guard rc == 0 else { throw BenchError("installing the SIGPROF recorder failed: \(rc)") }
        usleep(200_000)
        let cursor = worker.gapCursor
        let n0 = Int(bench_sigprof_recorded(nil, 0))
        let o0 = Int(bench_sigprof_other_threads())
        let i0 = workload.iterations, s0 = workload.gapStolenNanoseconds, t0 = Workload.now()
        usleep(UInt32(seconds * 1_000_000))
        let i1 = workload.iterations, s1 = workload.gapStolenNanoseconds, t1 = Workload.now()
        var times = [UInt64](repeating: 0, count: capacity)
        let n1 = Int(bench_sigprof_recorded(&times, UInt64(capacity)))
        let o1 = Int(bench_sigprof_other_threads())
        workload.finish()
        let tid = worker.tid.load(ordering: .relaxed)
        let window = times[min(n0, capacity)..<min(n1, capacity)].map {
            Sample(tid: tid, takenAt: Int($0), latency: 0, handler: 0, frames: 0)
        }
        let (stolen, below) = attribute(window, gaps: [tid: worker.gaps(since: cursor).gaps],
                                        typical: [tid: worker.typicalIterationNs.load(ordering: .relaxed)])
        let tails = tailsOf(window, gaps: [tid: worker.gaps(since: cursor).gaps])
        let report = WorkloadReport(iterations: i1 - i0, wallNanoseconds: t1 - t0, gapStolenNanoseconds: s1 - s0,
                                    typicalIterationNanoseconds: workload.typicalIteration,
                                    profilerSignals: n1 - n0, otherThreadSignals: o1 - o0,
                                    profilerActive: bench_sigprof_chained() == 1,
                                    stolenPerSample: stolen, stolenTail: tails, belowThreshold: below)
        if json {
            let data = try JSONEncoder().encode(report)
            FileHandle.standardOutput.write(data)
            FileHandle.standardOutput.write(Data("\n".utf8))
        } else {
            print(report)
        }
    }
}

