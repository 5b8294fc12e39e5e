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
import Stallwatch

/// `bench memory`: resident memory a watchdog's first stall report adds to a real server.
struct MemoryBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "memory",
        abstract: "Resident memory the first stall report adds to Examples/VaporServer (RssAnon, RssFile), against ≤ 4 MiB.",
        discussion: """
        Each round starts the example (its watchdog on, threshold --threshold ms), sends --warmup
        requests to GET /, waits until its resident set is steady (at least --settle s after
        start: the watchdog loads the executable's symbol table in the background at start), and
        reads RssAnon and RssFile from /proc/PID/status. It then blocks one pool job with
        GET /block/sleep?ms=--block-ms, waits for the stall report file with its final duration,
        waits --settle s again and reads them once more; a second stall gives the steady state.
        The verdict is on the median of the rounds' first-report figures (anonymous + file-backed).

        Beside it, in this process: the executable's symbol table loaded on its own (what the
        watchdog's preload pays at start and the first report would wait for without it): the
        time to load it, the resident memory it adds, and the time of one lookup.

        Build the example first: swift build --package-path Examples --product VaporServer (debug,
        as the end-to-end tests run it; about 9 minutes cold). Default run: about 40 s.
        """
    )

    @Option(help: "The example server's binary.")
    var binary: String = "Examples/.build/debug/VaporServer"

    @Option(help: "Rounds (each starts the server once).")
    var rounds: Int = 3

    @Option(help: "Stall threshold given to the server, ms.")
    var threshold: Int = 500

    @Option(name: .customLong("block-ms"), help: "How long the stalled request blocks its pool thread, ms.")
    var blockMilliseconds: Int = 1500

    @Option(help: "Requests to GET / before the first reading.")
    var warmup: Int = 200

    @Option(help: "Seconds to let the server settle before each reading.")
    var settle: Double = 2

    @Option(help: "Lookups timed in the in-process table measurement (per repetition, 5 repetitions).")
    var lookups: Int = 100_000

    @Option(help: "Also write the figures as a BenchRecord (JSON) to this file.")
    var json: String?

    func validate() throws {
        guard rounds >= 1, threshold >= 20, blockMilliseconds > threshold, warmup >= 0, settle >= 0, lookups >= 1 else {
            throw ValidationError("--rounds ≥ 1, --threshold ≥ 20, --block-ms > --threshold, --warmup ≥ 0, --settle ≥ 0, --lookups ≥ 1")
        }
        guard access(binary, X_OK) == 0 else {
            throw ValidationError("\(binary) is missing: swift build --package-path Examples --product VaporServer")
        }
    }

    func run() throws {
        let machine = MachineDescription.current()
        let start = (machine: machine, load: machine.loadAverage, at: Date())
        print("bench memory: \(machine.oneLine)")
        let size = (try? FileManager.default.attributesOfItem(atPath: binary)[.size] as? Int) ?? 0
        print("binary: \(binary) (\(size >> 20) MiB)")
        print("method: \(rounds) rounds × [start, \(warmup) × GET /, settle ≥ \(Fmt.f(settle, 1)) s, read RSS, GET /block/sleep?ms=\(blockMilliseconds) (threshold \(threshold) ms), final report, settle, read RSS; once more]")

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bench-memory-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var runs: [MemoryRound] = []
        for round in 0..<rounds {
            let run = try measure(round: round, reportDirectory: "\(directory)/\(round)")
            runs.append(run)
            print("round \(round + 1)/\(rounds): after start-up \(run.afterStartup.line); first report +\(run.first.map { $0.delta.line } ?? "none")"
                  + "; second +\(run.second.map { $0.delta.line } ?? "none")")
            print("  grew most with the first report: " + run.firstReportGrowth.map { "\($0.mapping) +\($0.kib)" }.joined(separator: ", "))
        }
        let table = try measureTable()

        let firsts = runs.compactMap(\.first)
        let seconds = runs.compactMap(\.second)
        let figures = MemoryFigures(addedAnonKiB: firsts.isEmpty ? nil : Stats.median(firsts.map { Double($0.delta.anonKiB) }),
                                    addedFileKiB: firsts.isEmpty ? nil : Stats.median(firsts.map { Double($0.delta.fileKiB) }))
        let goals = MemoryGoals.evaluate(figures)
        let summary = MemorySummary(
            binary: binary, binaryBytes: size, rounds: runs,
            afterStartupKiB: Spread(runs.map { Double($0.afterStartup.totalKiB) }),
            firstReportAddedAnonKiB: Spread(firsts.map { Double($0.delta.anonKiB) }),
            firstReportAddedFileKiB: Spread(firsts.map { Double($0.delta.fileKiB) }),
            firstReportAddedTotalKiB: Spread(firsts.map { Double($0.delta.totalKiB) }),
            secondReportAddedTotalKiB: Spread(seconds.map { Double($0.delta.totalKiB) }),
            firstReportSeconds: Spread(firsts.map(\.reportSeconds)),
            table: table)

        print("")
        print("resident after start-up and warm-up (KiB, median [min…max]): \(Fmt.s(summary.afterStartupKiB, 0))")
        print("added by the first report (KiB): anon \(Fmt.s(summary.firstReportAddedAnonKiB, 0)), file \(Fmt.s(summary.firstReportAddedFileKiB, 0)), total \(Fmt.s(summary.firstReportAddedTotalKiB, 0))")
        print("added by the second report (KiB, total): \(Fmt.s(summary.secondReportAddedTotalKiB, 0))")
        print("first report file after the stalled request began (s): \(Fmt.s(summary.firstReportSeconds, 3))")
        print("the executable's symbol table in this process: loaded in \(Fmt.f(table.loadMilliseconds, 1)) ms, +\(table.added.line) resident;"
              + " lookup \(Fmt.s(table.lookupNanoseconds, 0)) ns (\(Fmt.f(table.hitFraction * 100, 1)) % named), resident after \(lookups) × 5 lookups +\(table.addedAfterLookups.line),"
              + " after releasing the pages +\(table.addedAfterRelease.line); a lookup just after a release \(Fmt.s(table.lookupAfterReleaseNanoseconds, 0)) ns")
        for key in MemoryGoals.keys {
            guard let v = goals[key] else { continue }
            print("\(v.word) \(key): \(v.value.map { "\(Int($0)) KiB" } ?? "not measured") (goal \(v.goal))")
        }
        if let json {
            try BenchRecord(bench: "memory", start: start, goals: goals, figures: summary).write(to: json)
        }
    }

    private func measure(round: Int, reportDirectory: String) throws -> MemoryRound {
        let server = try ServerProcess(binary: binary, watchdog: true, thresholdMilliseconds: threshold,
                                       reportDirectory: reportDirectory)
        defer { server.stop() }
        for _ in 0..<warmup { _ = server.get("/") }
        let afterStartup = steadyRSS(of: server.pid)
        let mappings = MappingResidency.read(server.pid)
        let first = stall(server, reportDirectory: reportDirectory, since: afterStartup)
        let grown = MappingResidency.read(server.pid).grown(since: mappings, top: 6)
        let second = first == nil ? nil : stall(server, reportDirectory: reportDirectory, since: first?.after ?? afterStartup)
        return MemoryRound(round: round, afterStartup: afterStartup, first: first, second: second, firstReportGrowth: grown)
    }

    /// The resident set once it stopped moving: read every 250 ms after `settle` s, until two
    /// readings a second apart differ by under 256 KiB (at most 20 s).
    private func steadyRSS(of pid: Int32) -> ResidentMemory {
        usleep(UInt32(settle * 1_000_000))
        var previous = ResidentMemory.read(pid)
        for _ in 0..<20 {
            usleep(1_000_000)
            let now = ResidentMemory.read(pid)
            if abs(now.totalKiB - previous.totalKiB) < 256 { return now }
            previous = now
        }
        return previous
    }

    /// One stall: the blocking request, the wait for its final report, the resident set after it.
    private func stall(_ server: ServerProcess, reportDirectory: String, since before: ResidentMemory) -> StallMemory? {
        let known = Set(Self.reportFiles(reportDirectory))
        let done = DispatchSemaphore(value: 0)
        let path = "/block/sleep?ms=\(blockMilliseconds)"
        let began = Date()
        let port = server.port
        DispatchQueue.global().async {
            _ = ServerProcess.get(path, port: port)
            done.signal()
        }
        var firstSeen: Date?
        var final = false
        let deadline = began.addingTimeInterval(Double(blockMilliseconds) / 1000 + 15)
        while !final && Date() < deadline {
            let new = Self.reportFiles(reportDirectory).filter { !known.contains($0) }
            if !new.isEmpty, firstSeen == nil { firstSeen = Date() }
            final = !new.isEmpty && new.allSatisfy { Self.isFinal("\(reportDirectory)/\($0)") }
            if !final { usleep(20_000) }
        }
        _ = done.wait(timeout: .now() + 15)
        guard final, let firstSeen else {
            FileHandle.standardError.write(Data("no final report within 15 s of the stall's end\n".utf8))
            return nil
        }
        usleep(UInt32(settle * 1_000_000))
        let after = ResidentMemory.read(server.pid)
        return StallMemory(after: after, delta: after - before, reportSeconds: firstSeen.timeIntervalSince(began))
    }

    private static func reportFiles(_ directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".json") && $0.contains("-stall-") && !$0.hasPrefix(".") }
    }

    private static func isFinal(_ path: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: path),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return false }
        return (object["durationIsFinal"] as? Bool) == true
    }

    /// The executable's symbol table, loaded here on its own: what it costs to load, to keep and to use.
    private func measureTable() throws -> TableMemory {
        let before = ResidentMemory.read(getpid())
        let t0 = Workload.now()
        guard let table = ModuleSymbols(path: binary) else { throw BenchError("\(binary): no symbol table could be read") }
        let loadMilliseconds = Double(Workload.now() - t0) / 1e6
        let loaded = ResidentMemory.read(getpid())
        guard let text = Self.textSection(binary) else { throw BenchError("\(binary): no .text section") }
        // A fixed pseudo-random sequence of addresses in .text, the same in every run.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let addresses = (0..<lookups).map { _ -> UInt64 in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return text.address + (state >> 16) % text.size
        }
        var timings: [Double] = []
        var hits = 0
        var sink: UInt64 = 0
        for _ in 0..<5 {
            hits = 0
            let t = Workload.now()
            for a in addresses {
                if let hit = table.lookup(fileAddress: a) {
                    hits += 1
                    sink &+= hit.start &+ UInt64(hit.name.utf8.count)
                }
            }
            timings.append(Double(Workload.now() - t) / Double(addresses.count))
        }
        let afterLookups = ResidentMemory.read(getpid())
        // What the symbolizer does after each stack: the pages the lookups read go back.
        table.releasePages()
        let afterRelease = ResidentMemory.read(getpid())
        // A lookup that has to fault its pages back in (the first of a report, after a release).
        var cold: [Double] = []
        for a in addresses.prefix(200) {
            table.releasePages()
            let t = Workload.now()
            if let hit = table.lookup(fileAddress: a) { sink &+= hit.start }
            cold.append(Double(Workload.now() - t))
        }
        table.releasePages()
        withExtendedLifetime(sink) {}
        return TableMemory(loadMilliseconds: loadMilliseconds, added: loaded - before,
                           lookupNanoseconds: Spread(timings), hitFraction: Double(hits) / Double(addresses.count),
                           addedAfterLookups: afterLookups - before, addedAfterRelease: afterRelease - before,
                           lookupAfterReleaseNanoseconds: Spread(cold))
    }

    /// The `.text` section's address and size, from the section headers.
    static func textSection(_ path: String) -> (address: UInt64, size: UInt64)? {
        guard let file = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? file.close() }
        func read(_ offset: UInt64, _ count: Int) -> [UInt8]? {
            guard (try? file.seek(toOffset: offset)) != nil, let data = try? file.read(upToCount: count), data.count == count else { return nil }
            return [UInt8](data)
        }
        func u(_ b: [UInt8], _ o: Int, _ n: Int) -> UInt64 { (0..<n).reduce(0) { $0 | UInt64(b[o + $1]) << (8 * $1) } }
        guard let header = read(0, 64), header.starts(with: [0x7f, 0x45, 0x4c, 0x46, 2]) else { return nil }
        let shoff = u(header, 0x28, 8), entsize = Int(u(header, 0x3a, 2)), count = Int(u(header, 0x3c, 2)), names = Int(u(header, 0x3e, 2))
        guard entsize >= 64, count > names, let table = read(shoff, entsize * count) else { return nil }
        let namesOffset = u(table, names * entsize + 24, 8), namesSize = Int(u(table, names * entsize + 32, 8))
        guard let strings = read(namesOffset, namesSize) else { return nil }
        for i in 0..<count {
            let name = Int(u(table, i * entsize, 4))
            guard name < strings.count, strings[name...].starts(with: Array(".text\0".utf8)) else { continue }
            return (u(table, i * entsize + 16, 8), u(table, i * entsize + 32, 8))
        }
        return nil
    }
}

/// RssAnon, RssFile and RssShmem of a process, KiB, from /proc/PID/status.
struct ResidentMemory: Codable {
    var anonKiB = 0
    var fileKiB = 0
    var shmemKiB = 0

    var totalKiB: Int { anonKiB + fileKiB }
    var line: String { "\(totalKiB) KiB (anon \(anonKiB), file \(fileKiB))" }

    static func read(_ pid: Int32) -> ResidentMemory {
        var m = ResidentMemory()
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        for line in text.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, let kib = Int(fields[1]) else { continue }
            switch fields[0] {
            case "RssAnon:": m.anonKiB = kib
            case "RssFile:": m.fileKiB = kib
            case "RssShmem:": m.shmemKiB = kib
            default: break
            }
        }
        return m
    }

    static func - (a: ResidentMemory, b: ResidentMemory) -> ResidentMemory {
        ResidentMemory(anonKiB: a.anonKiB - b.anonKiB, fileKiB: a.fileKiB - b.fileKiB, shmemKiB: a.shmemKiB - b.shmemKiB)
    }
}

/// One stall: the resident set after its final report, the change since the previous reading,
/// and when its first report file appeared after the blocking request was sent (s).
struct StallMemory: Codable {
    var after: ResidentMemory
    var delta: ResidentMemory
    var reportSeconds: Double
}

/// One server run.
struct MemoryRound: Codable {
    var round: Int
    var afterStartup: ResidentMemory
    var first: StallMemory?
    var second: StallMemory?
    /// The mappings whose resident size grew most from after start-up to after the first report.
    var firstReportGrowth: [MappingGrowth]
}

/// The executable's table loaded in the bench's own process.
struct TableMemory: Codable {
    var loadMilliseconds: Double
    var added: ResidentMemory
    /// Per lookup over pseudo-random addresses in `.text`, ns, median [min…max] of 5 repetitions.
    var lookupNanoseconds: Spread
    var hitFraction: Double
    var addedAfterLookups: ResidentMemory
    /// After `ModuleSymbols.releasePages()`, as the symbolizer calls it after each stack.
    var addedAfterRelease: ResidentMemory
    /// One lookup whose pages were just released (it faults them back in), ns, median [min…max] of 200.
    var lookupAfterReleaseNanoseconds: Spread
}

/// Resident KiB per mapped file (or `[anon]`, `[heap]`, `[stack]`), from /proc/PID/smaps: where an
/// increase went.
struct MappingResidency {
    var kib: [String: Int] = [:]

    static func read(_ pid: Int32) -> MappingResidency {
        var m = MappingResidency()
        guard let file = fopen("/proc/\(pid)/smaps", "r") else { return m }
        defer { fclose(file) }
        var current = "[anon]"
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            let text = String(cString: line)
            let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" })
            if let first = fields.first, first.contains("-"), first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                current = fields.count >= 6 ? String(fields[5].split(separator: "/").last ?? fields[5]) : "[anon]"
            } else if fields.first == "Rss:", fields.count >= 2, let k = Int(fields[1]) {
                m.kib[current, default: 0] += k
            }
        }
        return m
    }

    /// The `top` mappings that grew most since `earlier`.
    func grown(since earlier: MappingResidency, top: Int) -> [MappingGrowth] {
        Set(kib.keys).union(earlier.kib.keys)
            .map { MappingGrowth(mapping: $0, kib: (kib[$0] ?? 0) - (earlier.kib[$0] ?? 0)) }
            .filter { $0.kib > 0 }
            .sorted { ($0.kib, $1.mapping) > ($1.kib, $0.mapping) }
            .prefix(top).map { $0 }
    }
}

struct MappingGrowth: Codable {
    var mapping: String
    var kib: Int
}

/// What `--json` writes as the record's figures.
struct MemorySummary: Codable {
    var binary: String
    var binaryBytes: Int
    var rounds: [MemoryRound]
    var afterStartupKiB: Spread
    var firstReportAddedAnonKiB: Spread
    var firstReportAddedFileKiB: Spread
    var firstReportAddedTotalKiB: Spread
    var secondReportAddedTotalKiB: Spread
    var firstReportSeconds: Spread
    var table: TableMemory
}
