import ArgumentParser
import BenchGoals
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `bench server`: the Hummingbird example under wrk, watchdog on and off in alternating rounds.
struct ServerBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "server",
        abstract: "A real server under load: Examples/HummingbirdServer under wrk, watchdog on and off in alternating rounds.",
        discussion: """
        Each round starts the example twice — with Stallwatch (its defaults, threshold
        STALLWATCH_THRESHOLD_MS = --threshold) and as its twin HummingbirdServerBare (the same routes,
        tracing middleware and metrics backend; no watchdog, pool hook, tick delegate or request
        attribution) —
        in an order that alternates every round; each run is warmed up with wrk for --warmup s,
        then measured with `wrk --latency -t --threads -c --connections -d --seconds` on
        127.0.0.1, GET /. Client and server share this machine's CPUs.

        Direct measures, beside req/s and p99: the watchdog thread's CPU (its schedstat, read from
        /proc), the server's CPU per request, the sampler's signal captures (GET /stallwatch/stats),
        and the stall events the server printed (none expected: every request is short). The
        watchdog's cost is the direct measure; the A/B differences (req/s, and the server's CPU per
        request: what Stallwatch adds to each request, watchdog thread included) are printed with
        their spread and called noise when inside it.

        Build the example first: swift build -c release --package-path Examples --product
        HummingbirdServer, then --product HummingbirdServerBare (scripts/bench-server.sh does
        everything). Default run: about 100 s.

        Goals, printed PASS/MISS at the end (and in --json FILE, a BenchRecord): the watchdog thread
        ≤ 0.01 % of a core under wrk; ≤ 0.5 idle event-loop wake-ups/s per loop and ≤ 0.5 idle
        cooperative-pool wake-ups/s added by the watchdog (--idle-seconds 0: not measured, a MISS);
        no stall reported under load.
        """
    )

    @Option(help: "The example server's binary.")
    var binary: String = "Examples/.build/release/HummingbirdServer"

    @Option(help: "Rounds (each runs the server once with and once without the watchdog).")
    var rounds: Int = 4

    @Option(help: "Measured seconds per run.")
    var seconds: Int = 8

    @Option(help: "wrk warm-up seconds per run (not measured).")
    var warmup: Int = 2

    @Option(help: "wrk connections.")
    var connections: Int = 32

    @Option(help: "wrk threads.")
    var threads: Int = 2

    @Option(help: "Stall threshold given to the server, ms (default: the library's 2 s, as a service runs it).")
    var threshold: Int = 2000

    @Option(name: .customLong("idle-seconds"), help: "Seconds each run is left idle (after start-up, before wrk) to count event-loop and watchdog wake-ups.")
    var idleSeconds: Double = 5

    @Option(help: "Also write the figures as JSON to this file.")
    var json: String?

    static let wrk = "/usr/bin/wrk"

    func validate() throws {
        guard rounds >= 1, seconds >= 1, warmup >= 0, connections >= 1, threads >= 1, threshold >= 20, idleSeconds >= 0 else {
            throw ValidationError("--rounds, --seconds, --connections, --threads ≥ 1; --warmup ≥ 0; --threshold ≥ 20")
        }
        guard access(Self.wrk, X_OK) == 0 else { throw ValidationError("\(Self.wrk) is missing: scripts/install-deps.sh --bench installs it") }
        guard access(binary, X_OK) == 0 else {
            throw ValidationError("\(binary) is missing: swift build -c release --package-path Examples --product HummingbirdServer")
        }
    }

    func run() throws {
        let start = RunStart.now()
        let machine = start.machine
        print("bench server: \(machine.oneLine)")
        print("method: \(rounds) rounds × [watchdog on, off] (order alternating), each: start, wrk \(warmup) s warm-up, wrk -t\(threads) -c\(connections) -d\(seconds)s --latency GET /; threshold \(threshold) ms; expected run time ≈ \(rounds * 2 * (seconds + warmup + 2)) s")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-server-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var runs: [ServerRun] = []
        let started = Workload.now()
        for round in 0..<rounds {
            for watchdog in round % 2 == 0 ? [true, false] : [false, true] {
                let run = try measure(watchdog: watchdog, round: round, reportDirectory: directory)
                runs.append(run)
                FileHandle.standardError.write(Data("round \(round + 1)/\(rounds) \(watchdog ? "on" : "off"): \(Fmt.f(run.wrk.requestsPerSecond, 0)) req/s\n".utf8))
            }
        }
        let summary = ServerSummary(machine: machine.oneLine, runs: runs, runSeconds: Double(Workload.now() - started) / 1e9,
                                    loadAverageAtEnd: MachineDescription.current().loadAverage)
        summary.print()
        let goals = ServerGoals.evaluate(summary.goalFigures)
        GoalLines.print(goals, keys: ServerGoals.keys)
        if let json {
            try BenchRecord(bench: "server", start: start, goals: goals, figures: summary).write(to: json)
        }
    }

    private func measure(watchdog: Bool, round: Int, reportDirectory: String) throws -> ServerRun {
        let server = try ServerProcess(binary: binary, watchdog: watchdog, thresholdMilliseconds: threshold,
                                       reportDirectory: reportDirectory)
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/"
        let idle = idleSeconds > 0 ? measureIdle(server) : nil
        if warmup > 0 { _ = try runWrk(url: url, seconds: warmup) }
        let captures0 = server.samplerCapturesAnswered()
        let watchdog0 = server.threadCPUNanoseconds(named: "stallwatch")
        let process0 = server.processCPUNanoseconds()
        let busyWatchdog0 = server.schedStats(threads: { $0 == "stallwatch" })
        let t0 = Workload.now()
        let output = try runWrk(url: url, seconds: seconds)
        let wall = Double(Workload.now() - t0) / 1e9
        let watchdog1 = server.threadCPUNanoseconds(named: "stallwatch")
        let busyWatchdog = server.schedStats(threads: { $0 == "stallwatch" }).rates(since: busyWatchdog0, seconds: wall)
        let process1 = server.processCPUNanoseconds()
        let captures1 = server.samplerCapturesAnswered()
        guard let result = WrkResult(output: output) else { throw BenchError("could not read wrk's output:\n\(output)") }
        let watchdogCPU = zip2(watchdog0, watchdog1).map { Double($1 - $0) / 1e9 / wall * 100 }
        return ServerRun(round: round, watchdog: watchdog, wrk: result,
                         watchdogCPUPercentOfCore: watchdog ? watchdogCPU : nil,
                         watchdogThreadFound: watchdog1 != nil,
                         serverCPUMicrosecondsPerRequest: result.requests > 0 ? Double(process1 - process0) / 1000 / Double(result.requests) : .nan,
                         samplerCaptures: zip2(captures0, captures1).map { $1 - $0 },
                         stallEvents: server.stallEvents, idle: idle,
                         watchdogWakeupsPerSecondUnderLoad: watchdog ? busyWatchdog.wakeupsPerSecond : nil)
    }

    /// The idle server: how often its event loops, pool threads and watchdog were put on a CPU
    /// (schedstat timeslices: one per wake-up of a sleeping thread) over `idleSeconds`, after a
    /// second to settle from start-up. Nothing talks to the server meanwhile.
    private func measureIdle(_ server: ServerProcess) -> IdleFigures {
        usleep(1_000_000)
        let loops = { (name: String) in name.hasPrefix("NIO-ELT-") }
        let pool = { (name: String) in name.hasSuffix("-qos") }
        let dog = { (name: String) in name == "stallwatch" }
        let l0 = server.schedStats(threads: loops), p0 = server.schedStats(threads: pool), w0 = server.schedStats(threads: dog)
        let t0 = Workload.now()
        usleep(UInt32(idleSeconds * 1_000_000))
        let wall = Double(Workload.now() - t0) / 1e9
        let l1 = server.schedStats(threads: loops), p1 = server.schedStats(threads: pool), w1 = server.schedStats(threads: dog)
        let l = l1.rates(since: l0, seconds: wall), p = p1.rates(since: p0, seconds: wall), w = w1.rates(since: w0, seconds: wall)
        return IdleFigures(seconds: wall, loopThreads: l1.threads, loopWakeupsPerSecond: l.wakeupsPerSecond,
                           poolThreads: p1.threads, poolWakeupsPerSecond: p.wakeupsPerSecond,
                           watchdogWakeupsPerSecond: w1.threads > 0 ? w.wakeupsPerSecond : nil,
                           watchdogCPUPercentOfCore: w1.threads > 0 ? w.cpuPercent : nil,
                           loadAverage: MachineDescription.current().loadAverage)
    }

    private func runWrk(url: String, seconds: Int) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.wrk)
        process.arguments = ["-t\(threads)", "-c\(connections)", "-d\(seconds)s", "--latency", url]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("wrk exited with status \(process.terminationStatus)") }
        return String(decoding: data, as: UTF8.self)
    }
}

private func zip2<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}

/// One measured run of the server.
struct ServerRun: Codable {
    var round: Int
    var watchdog: Bool
    var wrk: WrkResult
    /// The watchdog thread's CPU over the measured window, % of a core (nil with the watchdog off).
    var watchdogCPUPercentOfCore: Double?
    var watchdogThreadFound: Bool
    /// The server process's CPU (all threads) per request served, µs.
    var serverCPUMicrosecondsPerRequest: Double
    /// Signal captures the sampler answered in the window (nil when the endpoint did not answer).
    var samplerCaptures: Int?
    /// Stall events the server printed over its whole run (warm-up included).
    var stallEvents: Int
    /// The idle window before wrk, if measured.
    var idle: IdleFigures?
    /// The watchdog thread's wake-ups per second under wrk (nil with the watchdog off).
    var watchdogWakeupsPerSecondUnderLoad: Double?
}

/// Wake-ups of the idle server's threads (schedstat timeslices per second), by kind.
struct IdleFigures: Codable {
    var seconds: Double
    var loopThreads: Int
    /// All event-loop threads together: SwiftNIO runs one tick per wake-up.
    var loopWakeupsPerSecond: Double
    var poolThreads: Int
    var poolWakeupsPerSecond: Double
    var watchdogWakeupsPerSecond: Double?
    var watchdogCPUPercentOfCore: Double?
    var loadAverage: String
}

/// The rounds, summarised per mode, with the paired A/B differences.
struct ServerSummary: Codable {
    var machine: String
    var runs: [ServerRun]
    var runSeconds: Double
    var loadAverageAtEnd: String

    func print() {
        let f = Fmt.f, s = Fmt.s, pad = Fmt.pad
        let on = runs.filter(\.watchdog), off = runs.filter { !$0.watchdog }
        Swift.print("")
        Swift.print(pad("watchdog", 10) + pad("req/s median [min…max]", 34) + pad("p99 ms", 26) + pad("server CPU µs/request", 26)
                    + pad("watchdog thread CPU % of a core", 36) + pad("sampler captures", 18) + "stalls reported")
        for (label, list) in [("on", on), ("off", off)] {
            let wd = list.compactMap(\.watchdogCPUPercentOfCore)
            Swift.print(pad(label, 10) + pad(s(Spread(list.map(\.wrk.requestsPerSecond)), 0), 34)
                        + pad(s(Spread(list.map(\.wrk.latencyP99Milliseconds)), 2), 26)
                        + pad(s(Spread(list.map(\.serverCPUMicrosecondsPerRequest)), 1), 26)
                        + pad(wd.isEmpty ? "- (no watchdog)" : s(Spread(wd), 4), 36)
                        + pad(label == "on" ? "\(list.compactMap(\.samplerCaptures).reduce(0, +))" : "-", 18)
                        + "\(list.map(\.stallEvents).reduce(0, +))")
        }
        // Paired by round: the two runs of a round are closest in time, so drift hits both alike.
        var throughput: [Double] = [], p99: [Double] = [], cpuPerRequest: [Double] = []
        for round in Set(runs.map(\.round)).sorted() {
            guard let a = on.first(where: { $0.round == round }), let b = off.first(where: { $0.round == round }) else { continue }
            throughput.append((a.wrk.requestsPerSecond / b.wrk.requestsPerSecond - 1) * 100)
            p99.append((a.wrk.latencyP99Milliseconds / b.wrk.latencyP99Milliseconds - 1) * 100)
            cpuPerRequest.append(a.serverCPUMicrosecondsPerRequest - b.serverCPUMicrosecondsPerRequest)
        }
        let dt = Spread(throughput), dp = Spread(p99)
        // The noise: how far apart runs of the same mode land (the wider of the two modes).
        let noise = [on, off].map { list -> Double in
            let sp = Spread(list.map(\.wrk.requestsPerSecond))
            return sp.width / sp.median * 100
        }.max() ?? .nan
        Swift.print("")
        Swift.print("A/B, on vs off in the same round: req/s \(s(dt, 1)) %, p99 \(s(dp, 1)) %; runs of the same mode spread up to \(f(noise, 1)) % in req/s")
        let dc = Spread(cpuPerRequest)
        let offCPU = Spread(off.map(\.serverCPUMicrosecondsPerRequest))
        let cpuNoise = max(offCPU.width, Spread(on.map(\.serverCPUMicrosecondsPerRequest)).width)
        Swift.print("A/B, server CPU per request, on minus off in the same round: \(s(dc, 2)) µs (off: \(s(offCPU, 1)) µs; "
                    + "runs of the same mode spread up to \(f(cpuNoise, 1)) µs)")
        let straddles = dt.min <= 0 && dt.max >= 0
        if throughput.count < 3 {
            Swift.print("noise: \(throughput.count) round(s) cannot tell an effect from noise (use --rounds 4 or more); the direct measure is the watchdog thread's CPU above")
        } else if straddles || abs(dt.median) <= noise {
            Swift.print("noise: the throughput difference (\(f(dt.median, 1)) %) is inside the noise (paired differences span \(f(dt.min, 1))…\(f(dt.max, 1)) %, same-mode spread \(f(noise, 1)) %): this A/B test cannot resolve the watchdog's cost; the direct measure is its thread's CPU above")
        } else {
            Swift.print("the throughput difference (\(f(dt.median, 1)) %) is outside the same-mode spread (\(f(noise, 1)) %) and every round agrees on its sign")
        }
        let wd = Spread(on.compactMap(\.watchdogCPUPercentOfCore))
        Swift.print("direct: the watchdog thread used \(f(wd.median, 4)) % of a core [\(f(wd.min, 4))…\(f(wd.max, 4))] under load; "
                    + "the sampler answered \(on.compactMap(\.samplerCaptures).reduce(0, +)) signal captures in \(on.count) measured windows "
                    + "(timer-ring samples are taken only while a loop is suspected of stalling and the library keeps no counter of them); "
                    + "\(on.map(\.stallEvents).reduce(0, +)) stall(s) reported (none expected)")
        if on.contains(where: { !$0.watchdogThreadFound }) { Swift.print("warning: the watchdog thread was not found in some runs") }
        let wdWake = Spread(on.compactMap(\.watchdogWakeupsPerSecondUnderLoad))
        Swift.print("watchdog thread under wrk: \(f(wdWake.median, 1)) wake-ups/s [\(f(wdWake.min, 1))…\(f(wdWake.max, 1))]")
        printIdle(on: on.compactMap(\.idle), off: off.compactMap(\.idle))
        let errors = runs.map(\.wrk.errors).reduce(0, +)
        if errors > 0 { Swift.print("wrk errors (socket errors, non-2xx): \(errors)") }
        Swift.print("run time: \(f(runSeconds, 1)) s; load average at the end: \(loadAverageAtEnd)")
    }

    /// The idle windows: event-loop wake-ups (one tick each) with the watchdog and without it.
    private func printIdle(on: [IdleFigures], off: [IdleFigures]) {
        guard !on.isEmpty, !off.isEmpty else { return }
        let f = Fmt.f
        Swift.print("")
        Swift.print("idle (\(f(on[0].seconds, 1)) s per run, nothing sent to the server; wake-ups = schedstat timeslices per second, summed over the threads):")
        for (label, list) in [("on", on), ("off", off)] {
            let loops = Spread(list.map(\.loopWakeupsPerSecond)), pool = Spread(list.map(\.poolWakeupsPerSecond))
            var line = "  watchdog \(label): \(list[0].loopThreads) event loops \(f(loops.median, 2)) wake-ups/s [\(f(loops.min, 2))…\(f(loops.max, 2))]"
                + "; \(list.map(\.poolThreads).max() ?? 0) pool threads \(f(pool.median, 1))/s [\(f(pool.min, 1))…\(f(pool.max, 1))]"
            let w = list.compactMap(\.watchdogWakeupsPerSecond), c = list.compactMap(\.watchdogCPUPercentOfCore)
            if !w.isEmpty {
                let ws = Spread(w), cs = Spread(c)
                line += "; watchdog thread \(f(ws.median, 1)) wake-ups/s [\(f(ws.min, 1))…\(f(ws.max, 1))], \(f(cs.median, 4)) % of a core [\(f(cs.min, 4))…\(f(cs.max, 4))]"
            }
            Swift.print(line + "; load \(list.map(\.loadAverage).joined(separator: " | "))")
        }
        guard let added = Self.idleLoopWakeupsAdded(on: on, off: off), let pool = Self.idlePoolWakeupsAdded(on: on, off: off) else { return }
        Swift.print("  the watchdog adds \(f(added.all, 2)) event-loop wake-ups/s (\(f(added.perLoop, 2)) per loop; a ping every 40 ms would add 25 per loop)"
                    + " and \(f(pool, 2)) pool-thread wake-ups/s (a pool ping every 40 ms: 25)")
    }

    /// Idle pool-thread wake-ups/s the watchdog adds (medians, on minus off). An idle pool's
    /// threads exit after a few seconds unless something wakes them.
    static func idlePoolWakeupsAdded(on: [IdleFigures], off: [IdleFigures]) -> Double? {
        guard !on.isEmpty, !off.isEmpty else { return nil }
        let added = Spread(on.map(\.poolWakeupsPerSecond)).median - Spread(off.map(\.poolWakeupsPerSecond)).median
        return added == 0 ? 0 : added  // not -0.00 when both are equal
    }

    /// Idle event-loop wake-ups/s the watchdog adds, all loops together and per loop (medians, on
    /// minus off). A ping per loop per 40 ms would add 25 per loop; the loops' own idle wake-ups
    /// (timers) are the same with and without the watchdog, to within a fraction of one a second.
    static func idleLoopWakeupsAdded(on: [IdleFigures], off: [IdleFigures]) -> (all: Double, perLoop: Double)? {
        guard let first = on.first, !off.isEmpty else { return nil }
        let added = Spread(on.map(\.loopWakeupsPerSecond)).median - Spread(off.map(\.loopWakeupsPerSecond)).median
        return (added, added / Double(max(first.loopThreads, 1)))
    }

    /// The figures the goals are judged on.
    var goalFigures: ServerFigures {
        let on = runs.filter(\.watchdog), off = runs.filter { !$0.watchdog }
        let cpu = on.compactMap(\.watchdogCPUPercentOfCore)
        return ServerFigures(watchdogPercentOfCoreUnderLoad: cpu.isEmpty ? nil : Spread(cpu).median,
                             idleLoopWakeupsAddedPerLoop: Self.idleLoopWakeupsAdded(on: on.compactMap(\.idle), off: off.compactMap(\.idle))?.perLoop,
                             stallsReportedUnderLoad: on.isEmpty ? nil : on.map(\.stallEvents).reduce(0, +),
                             idlePoolWakeupsAdded: Self.idlePoolWakeupsAdded(on: on.compactMap(\.idle), off: off.compactMap(\.idle)))
    }
}
