import ArgumentParser
import BenchSupport
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
import StallwatchPolicy
import BenchGoals
import StallwatchReport

/// `bench sampler`: what sampling busy threads costs, measured A/B in one run, with a peer profiler.
struct SamplerBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sampler",
        abstract: "Measure the cost of sampling a busy thread's stack every 50 ms (the claim to beat: 3 % CPU).",
        discussion: """
        Method. CPU-bound workload threads run at a known stack depth for the whole run. Phases
        alternate A/B/A/B in one process — off, timer, thread, floor — rotating their order every
        round; every per-round figure is the median over N rounds with its [min…max] spread, and
        per-sample figures are pooled over all rounds (median, p99). The machine (CPU model, logical
        CPUs, NUMA nodes from NUMATopology.current(), kernel) is printed first.

          off     no sampling (the baseline of its round)
          timer   a kernel timer on the workload's CPU clock signals it every interval; the handler
                  walks frame pointers into a ring; a reader drains the ring once per second (the
                  watchdog's check period). No thread wakes per sample. libunwind is not possible
                  here: the ring's handler walks frame pointers itself.
          thread  a sampler thread wakes every interval and requests the stack (signal, handler
                  walk or stack copy, answer) — the request/answer path the watchdog uses.
          timer/empty  the timer ring's own floor: the same CPU-clock timer and signal, through
                  Stallwatch's dispatcher, to a handler that records only its time.
          floor   like thread, but the handler answers with the PC only: the bare signal round
                  trip. Every latency is also printed as a ratio to the floor's median.
          timer/empty again, floor again  the two floors once more in every round (A/A): what
                  two identical phases differ by in this run, beside each "× own floor" goal.
        Before measuring, every request slot is touched (one capture per slot) and a short fast
        timer phase is run and discarded, so no measured handler pays a first-touch page fault.
        --working-set-mib 8 gives the workload an 8 MiB working set (8 random cache lines per
        iteration), so the cache and TLB misses a handler causes land in the gap it is charged with.
          peers   gperftools' CPU profiler (libprofiler.so.0, LD_PRELOAD into a child `bench
                  workload` process, CPUPROFILE_FREQUENCY = 1000 / interval), default (libunwind)
                  and TCMALLOC_STACKTRACE_METHOD=generic_fp, against a child without it, in every
                  round. It uses ITIMER_PROF (process CPU time): with one busy thread the rate matches.

        Cost, two methods, each figure labelled with its method:
          gap     (precise) the workload records every gap in its progress (start, end) into a
                  preallocated ring; each sample is matched with the gap containing the time its
                  handler started (taken_at_ns); stolen = gap − typical iteration. A sample with no
                  enclosing gap stole less than the threshold (typical + 1 µs): counted, not timed.
          excess  (old) gap time per wall second with sampling minus without, × wall / samples.
                  Swamped by VM noise for small effects.
        Throughput loss is against the same round's off phase; this VM cannot resolve below about
        0.2 %. When a spread is larger than the effect, the output says so. Total cost = sampler
        thread CPU + gap-method stolen time, % of one core. Mallocs are counted by the bench's own
        malloc (no LD_PRELOAD) during each sampling phase, after the driver's setup.

        Goals (printed PASS/MISS with the figure; --json writes a BenchRecord: "goals" with pass,
        value, goal, detail, and this report under "figures"): total cost ≤ 0.03 % of a core; the
        timer ring's handler p50 ≤ 0.5 µs (frame records only); stolen per sample ≤ 1.1× timer/empty
        for the timer ring, ≤ 1.2× its floor for the request/answer path; below gperftools in both
        modes, and below generic_fp on its own; ≈ 0 system calls per sample in the ring's handler;
        the perf driver ≤ 0.9× the timer ring's stolen time (where perf events are permitted);
        request/answer latency p99 ≤ 3× the floor's median; no allocation while sampling; the
        watchdog thread's allocations during one sampled stall (stated separately); matrix's 3 %
        claim. A figure not measured is a MISS. A MISS never changes the exit status; only a failed
        run does.

        Run time: the default (6 rounds × 9 phases × 2 s, perf phases included, + 3 peer children × 2.5 s
        per round, then the unwind paths and one watchdog stall) takes about 170 s. --sweep runs interval (1, 10, 50, 100 ms) × unwinder (fp, libunwind) ×
        depth (8, 32, 128) × sampled threads (1, 8, 64), 3 rounds × 0.4 s phases: 4–5 minutes (301 s measured);
        the expected time is printed before it starts. `bench snapshot` measures held-still snapshots.
        """
    )

    @Option(help: "Sampling interval in milliseconds.")
    var interval: Double = 50

    @Option(help: "Alternation rounds (each runs every phase once).")
    var rounds: Int = 6

    @Option(name: .customLong("phase-seconds"), help: "Length of one phase in seconds.")
    var phaseSeconds: Double = 2

    @Option(help: "Stack depth of the workload (frames of its own recursion).")
    var depth: Int = 32

    @Option(help: "Unwinder for the thread driver: fp or libunwind (the timer driver always walks frame pointers).")
    var unwinder: String = "fp"

    @Option(name: .customLong("working-set-mib"), help: "Working set the workload touches every iteration, MiB (0: none; 8 shows cache and TLB pollution by the handler).")
    var workingSetMiB: Int = 0

    @Option(help: "Peer profiler to compare with: gperftools or none (default: gperftools when libprofiler.so.0 is installed).")
    var peer: String?

    @Flag(help: "Run the sweep (interval × unwinder × depth × threads) instead of the default table.")
    var sweep = false

    @Option(name: .customLong("sweep-rounds"), help: "Rounds per sweep group.")
    var sweepRounds: Int = 3

    @Option(name: .customLong("sweep-phase-seconds"), help: "Phase length in the sweep.")
    var sweepPhaseSeconds: Double = 0.4

    @Option(name: .customLong("sweep-intervals"), help: "Sweep intervals in ms, comma-separated.")
    var sweepIntervals: String = "1,10,50,100"

    @Option(name: .customLong("sweep-depths"), help: "Sweep depths, comma-separated.")
    var sweepDepths: String = "8,32,128"

    @Option(name: .customLong("sweep-threads"), help: "Sweep workload thread counts, comma-separated.")
    var sweepThreads: String = "1,8,64"

    @Option(help: "Write the figures as JSON to this file.")
    var json: String?

    func validate() throws {
        guard interval > 0, interval <= 10_000 else { throw ValidationError("--interval must be in (0, 10000] ms, got \(interval)") }
        guard rounds >= 1, rounds <= 1000 else { throw ValidationError("--rounds must be in 1...1000, got \(rounds)") }
        guard phaseSeconds >= 0.2, phaseSeconds <= 600 else { throw ValidationError("--phase-seconds must be in [0.2, 600], got \(phaseSeconds)") }
        guard depth >= 1, depth <= 200 else { throw ValidationError("--depth must be in 1...200, got \(depth)") }
        guard (0...1024).contains(workingSetMiB) else { throw ValidationError("--working-set-mib must be in 0...1024, got \(workingSetMiB)") }
        guard ["fp", "libunwind"].contains(unwinder) else { throw ValidationError("--unwinder must be fp or libunwind, got \(unwinder)") }
        guard peer == nil || ["gperftools", "none"].contains(peer ?? "") else {
            throw ValidationError("--peer must be gperftools or none, got \(peer ?? "")")
        }
        if peer == "gperftools" && !PeerRunner.available {
            throw ValidationError("--peer gperftools: \(PeerRunner.library) is missing (apt-get install libgoogle-perftools-dev)")
        }
        guard sweepRounds >= 1, sweepPhaseSeconds >= 0.1 else { throw ValidationError("--sweep-rounds >= 1, --sweep-phase-seconds >= 0.1") }
        for (name, list) in [("intervals", sweepIntervals), ("depths", sweepDepths), ("threads", sweepThreads)] {
            guard parseList(list) != nil else { throw ValidationError("--sweep-\(name): expected positive numbers separated by commas, got \(list)") }
        }
        guard (parseList(sweepThreads) ?? []).allSatisfy({ $0 <= Double(SW_MAX_RINGS) }) else {
            throw ValidationError("--sweep-threads: at most \(SW_MAX_RINGS) (one timer ring per thread)")
        }
    }

    func run() throws {
        let start = RunStart.now()
        let machine = start.machine
        print("bench sampler: \(machine.oneLine)")
        guard bench_malloc_counter_active() == 1 else { throw BenchError("the bench's malloc counter is not in use; cannot count allocations") }
        // Before the sampler: its dispatcher chains the timer/empty floor's ticks to this handler.
        try TimerFloorDriver.install()
        _ = try StackSampler()
        if sweep {
            try SweepRunner(command: self, machine: machine).run()
        } else {
            try runDefault(start: start)
        }
    }

    /// Why perf events cannot sample `tid` here, or `nil` when they can.
    static func perfRefusal(tid: Int32) -> String? {
        let rc = sw_perf_ring_start(tid, 50_000_000, 8, 4, 0)
        guard rc < 0 else {
            _ = sw_perf_ring_release(rc)
            return nil
        }
        return "perf_event_open: \(String(cString: strerror(-rc))), kernel.perf_event_paranoid = "
            + ((try? String(contentsOfFile: "/proc/sys/kernel/perf_event_paranoid", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? "?")
    }

    private func runDefault(start: RunStart) throws {
        let machine = start.machine
        let usePeer = peer == "gperftools" || (peer == nil && PeerRunner.available)
        let workload = Workload(depth: depth, threads: 1, workingSetBytes: workingSetMiB << 20)
        workload.start()
        let perfRefusal = Self.perfRefusal(tid: workload.tids.first ?? ThreadID.current.rawValue)
        if let perfRefusal { print("perf driver: refused here (\(perfRefusal)): its rows are absent") }
        if let why = SystemCallCounters.reasonUnavailable { print("system calls: not counted (\(why))") }
        let runner = PhaseRunner(workload: workload, maxSamplesPerPhase: Int(phaseSeconds * 1000 / interval) * 2 + 256)
        let specs: [PhaseSpec] = [PhaseSpec(mode: .off, intervalMilliseconds: interval, unwinder: "fp"),
                     PhaseSpec(mode: .timer, intervalMilliseconds: interval, unwinder: "fp"),
                     PhaseSpec(mode: .timerEmpty, intervalMilliseconds: interval, unwinder: "none"),
                     PhaseSpec(mode: .thread, intervalMilliseconds: interval, unwinder: unwinder),
                     PhaseSpec(mode: .floor, intervalMilliseconds: interval, unwinder: "none"),
                     // A/A: the two floors once more, so each run states what identical phases differ by.
                     PhaseSpec(mode: .timerEmpty, intervalMilliseconds: interval, unwinder: "none", again: true),
                     PhaseSpec(mode: .floor, intervalMilliseconds: interval, unwinder: "none", again: true)]
            + (perfRefusal == nil ? [PhaseSpec(mode: .perf, intervalMilliseconds: interval, unwinder: "fp"),
                                     PhaseSpec(mode: .perfChain, intervalMilliseconds: interval, unwinder: "fp")] : [])
        var peerRunner = PeerRunner(executable: try selfExecutable(), depth: depth, intervalMilliseconds: interval, seconds: phaseSeconds)
        peerRunner.workingSetMiB = workingSetMiB
        let perRound = Double(specs.count) * phaseSeconds + (usePeer ? 3 * (phaseSeconds + 0.5) : 0)
        print("workload: 1 thread, depth \(depth), typical iteration \(workload.typicalIteration) ns; interval \(Fmt.f(interval, 0)) ms; thread unwinder \(unwinder)"
              + (workingSetMiB > 0 ? "; working set \(workingSetMiB) MiB (\(Workload.workingSetAccesses) random cache lines per iteration)" : ""))
        print("method: \(rounds) rounds × [\(specs.map(\.label).joined(separator: ", "))\(usePeer ? ", peer-off, gperftools/libunwind, gperftools/generic_fp" : "")] × \(Fmt.f(phaseSeconds, 1)) s, order rotated every round; then the unwind paths and one watchdog stall for its allocations; expected run time ≈ \(Int(Double(rounds) * perRound) + 18) s")
        if !usePeer { print("peer: none (\(peer == "none" ? "--peer none" : "\(PeerRunner.library) not installed"))") }
        let started = Workload.now()
        // Nothing measured may pay a first touch: every request slot, and the ring's entries (a short
        // fast timer phase), are made resident first and that phase is discarded.
        guard let target = workload.tids.first else { throw BenchError("no workload thread") }
        try touchRequestSlots(target: target, unwinders: unwinder == "libunwind" ? [SW_UNWIND_FRAME_POINTER, SW_UNWIND_LIBUNWIND]
                                                                                  : [SW_UNWIND_FRAME_POINTER])
        for spec in specs.dropFirst() where !spec.again {
            _ = try runner.run(PhaseSpec(mode: spec.mode, intervalMilliseconds: 4, unwinder: spec.unwinder), seconds: 0.3)
        }
        var outcomes: [PhaseSpec: [(on: PhaseOutcome, off: PhaseOutcome)]] = [:]
        var background: [Double] = []
        var backgroundSeconds = 0.0
        var peerOutcomes: [PeerKind: [(on: WorkloadReport, off: WorkloadReport)]] = [:]
        var roundLoads: [String] = []
        for round in 0..<rounds {
            let rotated = (0..<specs.count).map { specs[($0 + round) % specs.count] }
            var results: [PhaseSpec: PhaseOutcome] = [:]
            for spec in rotated { results[spec] = try runner.run(spec, seconds: phaseSeconds) }
            guard let off = results[specs[0]] else { throw BenchError("round \(round): no off phase") }
            background += off.backgroundGaps.map { Double($0) / 1000 }
            backgroundSeconds += Double(off.wallNanoseconds) / 1e9
            for spec in specs.dropFirst() {
                if let on = results[spec] { outcomes[spec, default: []].append((on, off)) }
            }
            if usePeer {
                let kinds = PeerKind.allCases
                let order = (0..<kinds.count).map { kinds[($0 + round) % kinds.count] }
                var reports: [PeerKind: WorkloadReport] = [:]
                for kind in order { reports[kind] = try peerRunner.run(kind) }
                if let off = reports[.off] {
                    for kind in kinds where kind != .off {
                        if let on = reports[kind] { peerOutcomes[kind, default: []].append((on, off)) }
                    }
                }
            }
            roundLoads.append(MachineDescription.current().loadAverage)
            FileHandle.standardError.write(Data("round \(round + 1)/\(rounds) done (load \(roundLoads.last ?? "-"))\n".utf8))
        }
        workload.finish()
        let unwindPaths = try measureUnwindPaths(depth: depth, rounds: 5, seconds: 0.8)
        let stallAllocations = try measureWatchdogStallAllocations()
        let elapsed = Double(Workload.now() - started) / 1e9
        var rows = specs.dropFirst().map { CostRow(label: $0.label, rounds: outcomes[$0] ?? []) }
        for kind in PeerKind.allCases where kind != .off {
            if let r = peerOutcomes[kind] { rows.append(CostRow(peer: kind.rawValue, rounds: r)) }
        }
        let floorMedian = rows.first { $0.label == "floor" }?.latencyMedianMicroseconds ?? .nan
        var report = SamplerReport(machine: machine, intervalMilliseconds: interval, depth: depth, threads: 1,
                                   rounds: rounds, phaseSeconds: phaseSeconds, unwinder: unwinder,
                                   typicalIterationNanoseconds: workload.typicalIteration,
                                   floorLatencyMedianMicroseconds: floorMedian, rows: rows,
                                   residentBytes: Int(bench_rss_bytes()), runSeconds: elapsed,
                                   offGapsPerSecond: Double(background.count) / max(backgroundSeconds, 1e-9),
                                   offGapMedianMicroseconds: Stats.median(background),
                                   offGapP99Microseconds: Stats.percentile(background, 99),
                                   workingSetMiB: workingSetMiB, watchdogStall: stallAllocations,
                                   loadAverageAtEnd: MachineDescription.current().loadAverage)
        report.unwindPaths = unwindPaths
        report.roundLoads = roundLoads
        report.driverComparisons = DriverComparison.compare(outcomes, specs: specs)
        // Again, now that the unwind paths and driver comparisons are in: some goals stand on them.
        report.goals = OverheadGoals.evaluate(report.figures)
        report.printTables()
        if let json {
            // The report keeps its own keys (and its `goals`) under `figures`, as older runs wrote them.
            try BenchRecord(bench: "sampler", start: start, goals: report.goals, figures: report).write(to: json)
        }
        report.printVerdict()
    }
}

/// The path of the running executable (to spawn `bench workload`).
func selfExecutable() throws -> String {
    var buf = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buf, buf.count - 1)
    guard n > 0 else { throw BenchError("readlink /proc/self/exe failed: errno \(errno)") }
    return String(decoding: buf.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

func parseList(_ s: String) -> [Double]? {
    let parts = s.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
    guard !parts.isEmpty, parts.allSatisfy({ ($0 ?? 0) > 0 }) else { return nil }
    return parts.compactMap { $0 }
}

extension SamplerReport {
    /// The handler's time by the path its walk takes: what unwinding through code without frame
    /// pointers costs beside frame records, at the same depth, in the same run.
    func printUnwindPaths() {
        guard !unwindPaths.isEmpty else { return }
        let f = Fmt.f, pad = Fmt.pad
        print("")
        print("UNWIND PATHS (timer ring, 4 ms on the CPU clock, depth \(depth); first round discarded; handler = its wall time, CLOCK_MONOTONIC around the capture: a preemption inside it counts)")
        print(pad("path", 32) + pad("samples", 9) + pad("handler µs p50/p99", 20) + pad("frames p50", 12)
              + pad("table frames p50", 18) + pad("whole stacks", 14) + "caller above frameless code")
        for p in unwindPaths {
            // The bare walk keeps no tables and no names: those columns do not apply to it.
            let bare = p.path == UnwindPath.bareRecords.rawValue
            print(pad(p.path, 32) + pad("\(p.samples)", 9)
                  + pad("\(f(p.handlerP50Microseconds, 2))/\(f(p.handlerP99Microseconds, 2))", 20)
                  + pad(f(p.framesMedian, 0), 12) + pad(bare ? "–" : f(p.tableFramesMedian, 0), 18)
                  + pad(bare ? "–" : "\(f(p.wholeShare * 100, 0)) %", 14) + (bare ? "–" : "\(f(p.callerReachedShare * 100, 0)) %"))
        }
        // What following a 5-deep async chain adds to the handler: against the same stack, same
        // run, with the chain not followed (goal: at most 1.2x).
        if let on = unwindPaths.first(where: { $0.path == UnwindPath.asyncChain.rawValue }),
           let off = unwindPaths.first(where: { $0.path == UnwindPath.asyncChainOff.rawValue }), off.handlerP50Microseconds > 0 {
            let ratio = on.handlerP50Microseconds / off.handlerP50Microseconds
            print("async chain: handler p50 \(f(ratio, 3))x the same stack without it (\(f(on.framesMedian - off.framesMedian, 0)) frames more; goal <= 1.2: \(ratio <= 1.2 ? "PASS" : "MISS"))")
            // The chain's frames are frames the walk writes: per frame, what each one costs.
            if on.framesMedian > 0, off.framesMedian > 0 {
                let perFrameOn = on.handlerP50Microseconds * 1000 / on.framesMedian
                let perFrameOff = off.handlerP50Microseconds * 1000 / off.framesMedian
                print("async chain: \(f(perFrameOn, 1)) ns per frame against \(f(perFrameOff, 1)) ns without it (\(f(perFrameOn / perFrameOff, 3))x; \(f(1000 / perFrameOn, 1)) against \(f(1000 / perFrameOff, 1)) frames per µs)")
            }
        }
    }
}

/// Everything `bench sampler` measured.
struct SamplerReport: Codable {
    var machine: MachineDescription
    var intervalMilliseconds: Double
    var depth: Int
    var threads: Int
    var rounds: Int
    var phaseSeconds: Double
    var unwinder: String
    var typicalIterationNanoseconds: Int
    var floorLatencyMedianMicroseconds: Double
    var rows: [CostRow]
    var residentBytes: Int
    var runSeconds: Double
    /// Gaps in the off phases (no sampling): the background the per-sample gaps stand on.
    var offGapsPerSecond: Double
    var offGapMedianMicroseconds: Double
    var offGapP99Microseconds: Double
    var workingSetMiB: Int = 0
    var watchdogStall: WatchdogStallAllocations?
    var loadAverageAtEnd: String = ""
    /// The handler's time by walk path (frame records; unwind tables through frameless code).
    var unwindPaths: [UnwindPathFigures] = []
    /// One verdict per goal of the project (OverheadGoals), keyed by goal.
    var goals: [String: GoalVerdict] = [:]
    /// Load average after each round (the machine is shared: every figure stands on it).
    var roundLoads: [String] = []
    /// The perf driver against the timer ring, round by round.
    var driverComparisons: [DriverComparison] = []

    init(machine: MachineDescription, intervalMilliseconds: Double, depth: Int, threads: Int, rounds: Int,
         phaseSeconds: Double, unwinder: String, typicalIterationNanoseconds: Int, floorLatencyMedianMicroseconds: Double,
         rows: [CostRow], residentBytes: Int, runSeconds: Double, offGapsPerSecond: Double,
         offGapMedianMicroseconds: Double, offGapP99Microseconds: Double, workingSetMiB: Int = 0,
         watchdogStall: WatchdogStallAllocations? = nil, loadAverageAtEnd: String = "") {
        (self.machine, self.intervalMilliseconds, self.depth, self.threads) = (machine, intervalMilliseconds, depth, threads)
        (self.rounds, self.phaseSeconds, self.unwinder) = (rounds, phaseSeconds, unwinder)
        (self.typicalIterationNanoseconds, self.floorLatencyMedianMicroseconds) = (typicalIterationNanoseconds, floorLatencyMedianMicroseconds)
        (self.rows, self.residentBytes, self.runSeconds) = (rows, residentBytes, runSeconds)
        (self.offGapsPerSecond, self.offGapMedianMicroseconds, self.offGapP99Microseconds) =
            (offGapsPerSecond, offGapMedianMicroseconds, offGapP99Microseconds)
        (self.workingSetMiB, self.watchdogStall, self.loadAverageAtEnd) = (workingSetMiB, watchdogStall, loadAverageAtEnd)
        goals = OverheadGoals.evaluate(figures)
    }

    func printTables() {
        let f = Fmt.f, s = Fmt.s, pad = Fmt.pad
        printUnwindPaths()
        print("")
        print("COST (throughput: same-round off phase; stolen per sample: [gap] enclosing gap − typical iteration, [tail] gap end − handler start (lower bound), [excess] old on−off method)")
        print(pad("mode", 22) + pad("samples/s", 10) + pad("thr. loss %", 24) + pad("[gap] stolen µs p50/p99", 24)
              + pad("[tail] µs p50/p99", 20) + pad("matched/below", 14) + pad("[excess] stolen µs/sample", 28) + pad("sampler CPU %", 26) + pad("total % of a core [gap]", 26) + "[gap p50 × rate]")
        for r in rows {
            print(pad(r.label, 22) + pad(f(r.samplesPerSecond.median, 1), 10) + pad(s(r.throughputLossPercent, 2), 24)
                  + pad("\(f(r.stolenPerSampleGapMedianMicroseconds, 2))/\(f(r.stolenPerSampleGapP99Microseconds, 2))", 24)
                  + pad("\(f(r.stolenTailMedianMicroseconds, 2))/\(f(r.stolenTailP99Microseconds, 2))", 20)
                  + pad("\(r.samplesMatchedToGap)/\(r.samplesBelowThreshold)", 14)
                  + pad(s(r.stolenPerSampleExcessMicroseconds, 2), 28) + pad(s(r.samplerCPUPercentOfCore, 4), 26)
                  + pad(s(r.totalCostPercentOfCore, 4), 26) + s(r.totalCostFromMedianPercentOfCore, 4))
        }
        printSystemCalls()
        printDriverComparisons()
        print("background: without sampling the workload sees \(f(offGapsPerSecond, 0)) gaps/s (> typical + 1 µs), median \(f(offGapMedianMicroseconds, 2)) µs, p99 \(f(offGapP99Microseconds, 2)) µs — VM and kernel interruptions; a sample landing in one is charged with it")
        print("(median [min…max] over \(rounds) rounds of \(Fmt.f(phaseSeconds, 1)) s; p50/p99 pooled over all samples; gperftools rows: no sampler thread, its cost is all in the handler)")
        print("")
        print("LATENCY (request/answer path; ratio = ÷ floor median \(f(floorLatencyMedianMicroseconds, 1)) µs measured in this run)")
        print(pad("mode", 22) + pad("latency µs p50/p99", 22) + pad("× floor p50/p99", 18) + pad("[gap] stolen × floor", 22)
              + pad("handler µs p50", 16) + pad("frames p50", 12) + pad("failures", 10) + "mallocs: process/sampler thread")
        let floorStolen = rows.first { $0.label == "floor" }?.stolenPerSampleGapMedianMicroseconds ?? .nan
        for r in rows {
            let lat = r.latencyMedianMicroseconds.isNaN ? "- (no request)" : "\(f(r.latencyMedianMicroseconds, 1))/\(f(r.latencyP99Microseconds, 1))"
            let ratio = r.latencyMedianMicroseconds.isNaN ? "-" : "\(f(r.latencyMedianMicroseconds / floorLatencyMedianMicroseconds, 2))/\(f(r.latencyP99Microseconds / floorLatencyMedianMicroseconds, 2))"
            let mallocs = r.label.hasPrefix("gperftools") ? "-" : "\(r.processMallocsDuringSampling)/\(r.samplerThreadMallocs)"
            print(pad(r.label, 22) + pad(lat, 22) + pad(ratio, 18) + pad(f(r.stolenPerSampleGapMedianMicroseconds / floorStolen, 2), 22)
                  + pad(f(r.handlerMedianMicroseconds, 2), 16) + pad(f(r.framesMedian, 0), 12) + pad("\(r.failures)", 10) + mallocs)
        }
        print("")
        for r in rows where r.throughputLossPercent.width > abs(r.throughputLossPercent.median) {
            print("noise: \(r.label): throughput-loss spread (\(f(r.throughputLossPercent.width, 2)) points) is larger than the effect (\(f(r.throughputLossPercent.median, 2)) %): the A/B throughput cannot resolve it; rely on the [gap] figures")
        }
        let mallocs = rows.filter { !$0.label.hasPrefix("gperftools") }.map { $0.processMallocsDuringSampling + $0.samplerThreadMallocs }.reduce(0, +)
        print("allocation: \(mallocs) mallocs in the whole process during all sampling phases (counted by the bench's own malloc), \(mallocs == 0 ? "none on the sampling path after start" : "SOME ON THE SAMPLING PATH")")
        print("resident memory: \(residentBytes / 1024) KiB (RSS of this process: workload, sampler installed, rings mapped)")
        print("run time: \(f(runSeconds, 1)) s")
    }

    func printVerdict() {
        let f = Fmt.f
        if let w = watchdogStall {
            print("watchdog path during one \(f(w.stallMilliseconds, 0)) ms stall (\(w.thresholdMilliseconds) ms threshold, sampled every 50 ms, report written): "
                  + "\(w.watchdogThread) mallocs on the watchdog thread (\(w.beforeDetection) suspected → detected incl. the first report, "
                  + "\(w.whileStalled) while stalled: drains and scans, \(w.finalReport) for the final report); \(w.processWide) in the whole process (report writer included)")
        }
        GoalLines.print(goals, keys: OverheadGoals.keys)
        print("load average at the end: \(loadAverageAtEnd) (at the start: see the first line)")
    }

}

extension SamplerReport {
    /// The figures the goals are judged on, from this run's rows (nil where a row is missing).
    var figures: OverheadFigures {
        func row(_ label: String) -> CostRow? { rows.first { $0.label == label } }
        func stolen(_ label: String) -> Double? { row(label).map(\.stolenPerSampleGapMedianMicroseconds) }
        let thread = rows.first { $0.label.hasPrefix("thread/") }
        let samplingMallocs = rows.filter { !$0.label.hasPrefix("gperftools") }
            .map { $0.processMallocsDuringSampling + $0.samplerThreadMallocs }.reduce(0, +)
        return OverheadFigures(
            timerTotalPercentOfCore: row("timer/fp")?.totalCostPercentOfCore.median ?? .nan,
            timerStolenMicroseconds: stolen("timer/fp") ?? .nan,
            timerFloorStolenMicroseconds: stolen("timer/empty"),
            threadStolenMicroseconds: thread?.stolenPerSampleGapMedianMicroseconds,
            threadFloorStolenMicroseconds: stolen("floor"),
            threadLatencyP99Microseconds: thread?.latencyP99Microseconds,
            floorLatencyMedianMicroseconds: floorLatencyMedianMicroseconds,
            gperftoolsLibunwindStolenMicroseconds: stolen(PeerKind.gperftoolsDefault.rawValue),
            gperftoolsFramePointerStolenMicroseconds: stolen(PeerKind.gperftoolsFP.rawValue),
            samplingPathAllocations: samplingMallocs,
            watchdogPathAllocationsDuringStall: watchdogStall?.watchdogThread,
            timerHandlerP50Microseconds: unwindPaths.first { $0.path == UnwindPath.framePointers.rawValue }?.handlerP50Microseconds,
            timerHandlerFixedP50Microseconds: unwindPaths.first { $0.path == UnwindPath.pcOnly.rawValue }?.handlerP50Microseconds,
            timerHandlerBareWalkP50Microseconds: unwindPaths.first { $0.path == UnwindPath.bareRecords.rawValue }?.handlerP50Microseconds,
            timerSystemCallsPerSample: row("timer/fp")?.systemCallsPerSample,
            // The perf driver as `signalFreeSampling` runs it: call chain and stack copy.
            perfStolenOverTimer: driverComparisons.first { $0.label == PhaseSpec(mode: .perf, intervalMilliseconds: 0, unwinder: "fp").label }?
                .ratioToTimer.median,
            timerFloorAgainStolenMicroseconds: stolen("timer/empty again"),
            threadFloorAgainStolenMicroseconds: stolen("floor again"))
    }
}

/// One perf driver row against the timer ring, from the same rounds (alternating phases).
struct DriverComparison: Codable {
    var label: String
    /// Per round: median stolen per sample of this driver ÷ the timer ring's (timer/fp).
    var ratioToTimer: Spread
    /// Per round: the same ÷ the timer ring's floor (timer/empty).
    var ratioToTimerFloor: Spread
    /// Per round: median [tail] (gap end − sample time: a lower bound, free of whatever preceded the
    /// sample in its gap, such as a preemption under load) ÷ the timer ring's.
    var tailRatioToTimer: Spread
    var goal: Double = 0.9
    var pass: Bool { ratioToTimer.median <= goal }

    static func compare(_ outcomes: [PhaseSpec: [(on: PhaseOutcome, off: PhaseOutcome)]], specs: [PhaseSpec]) -> [DriverComparison] {
        func perRound(_ mode: Mode, tail: Bool = false) -> [Double]? {
            guard let spec = specs.first(where: { $0.mode == mode }), let rounds = outcomes[spec] else { return nil }
            return rounds.map { Stats.median((tail ? $0.on.tailPerSample : $0.on.stolenPerSample).map(Double.init)) }
        }
        guard let timer = perRound(.timer), let floor = perRound(.timerEmpty), let timerTail = perRound(.timer, tail: true) else { return [] }
        return specs.filter { $0.mode == .perf || $0.mode == .perfChain }.compactMap { spec in
            guard let mine = perRound(spec.mode), mine.count == timer.count,
                  let mineTail = perRound(spec.mode, tail: true) else { return nil }
            return DriverComparison(label: spec.label,
                                    ratioToTimer: Spread(zip(mine, timer).map { $0 / $1 }),
                                    ratioToTimerFloor: Spread(zip(mine, floor).map { $0 / $1 }),
                                    tailRatioToTimer: Spread(zip(mineTail, timerTail).map { $0 / $1 }))
        }
    }
}

extension SamplerReport {
    /// The sampled thread's own system calls per sample, by mode.
    func printSystemCalls() {
        let f = Fmt.f, pad = Fmt.pad
        print("")
        let counted = rows.filter { $0.systemCallsPerSample != nil }
        guard !counted.isEmpty else {
            print("SYSTEM CALLS on the sampled thread: not counted here (the raw_syscalls tracepoint needs root and tracefs): no figure, not 0")
            return
        }
        print("SYSTEM CALLS on the sampled thread per sample (kernel tracepoint raw_syscalls:sys_enter on the workload thread, as perf stat counts it; minus the same thread's unsampled off phase of each round; rt_sigreturn, a handler's return, apart)")
        print(pad("mode", 22) + pad("handler's own / sample", 24) + pad("rt_sigreturn / sample", 24) + "verdict")
        for r in counted {
            let own = r.systemCallsPerSample ?? .nan
            let noSyscallGoal = r.label == "timer/fp" || r.label.hasPrefix("perf/")
            let verdict = noSyscallGoal ? (abs(own) < 0.01 ? "PASS (≈ 0: no system call)" : "MISS (goal ≈ 0)")
                                        : (r.label.hasPrefix("thread") || r.label.hasPrefix("floor") ? "request path: the futex wake that answers" : "")
            print(pad(r.label, 22) + pad(f(own, 3), 24) + pad(f(r.sigreturnsPerSample ?? .nan, 3), 24) + verdict)
        }
    }

    /// The perf driver's stolen time per sample against the timer ring's, per round.
    func printDriverComparisons() {
        guard !driverComparisons.isEmpty else { return }
        print("")
        print("DRIVERS (stolen per sample [gap] p50 of each round ÷ the same round's timer/fp and timer/empty; median [min…max] over \(rounds) alternating rounds; load after each round: \(roundLoads.joined(separator: " | ")))")
        for c in driverComparisons {
            print("  \(Fmt.pad(c.label, 20)) [gap] ÷ timer/fp \(Fmt.pad(Fmt.s(c.ratioToTimer, 2), 22)) ÷ timer/empty \(Fmt.pad(Fmt.s(c.ratioToTimerFloor, 2), 22)) [tail] ÷ timer/fp \(Fmt.pad(Fmt.s(c.tailRatioToTimer, 2), 22)) goal ≤ \(Fmt.f(c.goal, 1))× timer/fp [gap]: \(c.pass ? "PASS" : "MISS")")
        }
        print("  (a CPU-clock timer fires at the scheduler tick, where a thread is also preempted under load: its [gap] then holds the wait for a CPU; a perf task-clock event samples from its own hrtimer: compare in a quiet run. [tail] is not comparable across drivers: a perf sample's time is when the kernel starts sampling, a handler's when the handler starts, after delivery)")
    }
}
