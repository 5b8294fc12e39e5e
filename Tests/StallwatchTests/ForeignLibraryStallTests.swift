import CSamplerTestSupport
import Foundation
import Glibc
import StallwatchPolicy
import StallwatchReport
import Synchronization
import Testing
@testable import Stallwatch

// Stalls inside code the service did not compile: Debian's libcrypto, libsqlite3, libz and glibc
// are built without frame pointers. Each stall is entered from a named Swift function through a C
// workload (Tests/CSamplerTestSupport/foreign_workloads.c), so a correct report names a frame
// inside the library, then the C workload, then the Swift function right above it, and goes on
// to the thread's first frame. Run once on a heartbeat-probed thread and once as a detached pool
// job, with a real watchdog at a 500 ms threshold.

/// How long each stall lasts: 2.6 thresholds, enough for a report and a few samples.
let foreignStallMilliseconds = 1300

/// One kind of stall inside a foreign library.
struct ForeignCase: Sendable, CustomStringConvertible {
    /// Short name for messages.
    var name: String
    /// The library's file name starts with this (`libcrypto.so`, `libc.so`, ...).
    var library: String
    /// Modules the frames below the C workload may lie in: the library, and what it calls into.
    var allowedBelow: [String]
    /// Any of these is the library's entry point, the frame right below the C workload.
    var entry: [String]
    /// The C workload's symbol.
    var cFunction: String
    /// The Swift function that calls the workload: must be the frame right above it.
    var swiftFunction: String
    /// The cause a correct report gives.
    var cause: StallCauseKind
    /// Runs the stall (blocking its thread); returns the workload's result, negative on failure.
    var run: @Sendable () -> Int64
    /// Ends a blocked stall from another thread after the stall's duration (closes the writer of a
    /// silent pipe); nil when the workload ends by itself.
    var release: (@Sendable () -> Void)? = nil
    /// Removes what the case made (temporary files), after the stall.
    var cleanup: (@Sendable () -> Void)? = nil

    var description: String { name }
}

// MARK: - The named Swift callers. @inline(never), and work after the call, so each is a real frame.

let foreignFailures = Atomic<Int>(0)

@inline(never)
func foreignFixtureNote(_ r: Int64) -> Int64 {
    if r < 0 { foreignFailures.add(1, ordering: .relaxed) }
    return r
}

@inline(never)
func foreignFixturePBKDF2(milliseconds: Int) -> Int64 {
    let r = sw_foreign_pbkdf2(UInt32(milliseconds))
    return foreignFixtureNote(r) &+ 1
}

@inline(never)
func foreignFixtureSQLiteQuery(milliseconds: Int) -> Int64 {
    let r = sw_foreign_sqlite_cte(UInt32(milliseconds))
    return foreignFixtureNote(r) &+ 1
}

@inline(never)
func foreignFixtureRegexec(milliseconds: Int) -> Int64 {
    let r = sw_foreign_regexec(UInt32(milliseconds))
    return foreignFixtureNote(r) &+ 1
}

@inline(never)
func foreignFixtureCompress(milliseconds: Int) -> Int64 {
    let r = sw_foreign_compress(UInt32(milliseconds))
    return foreignFixtureNote(r) &+ 1
}

@inline(never)
func foreignFixtureQsort(milliseconds: Int) -> Int64 {
    let r = sw_foreign_qsort(UInt32(milliseconds))
    return foreignFixtureNote(r) &+ 1
}

@inline(never)
func foreignFixtureGzread(fd: Int32) -> Int64 {
    let r = sw_foreign_gzread(fd)
    return foreignFixtureNote(r) &+ 1
}

@inline(never)
func foreignFixtureSQLiteBusy(path: String, milliseconds: Int) -> Int64 {
    let r = path.withCString { sw_foreign_sqlite_busy($0, UInt32(milliseconds)) }
    return foreignFixtureNote(r == 5 ? 0 : -1) &+ 1 // SQLITE_BUSY after the timeout
}

@inline(never)
func foreignFixtureMallocFree(milliseconds: Int) -> Int64 {
    let r = sw_foreign_malloc_free(256, UInt32(milliseconds))
    return foreignFixtureNote(r) &+ 1
}

@inline(never)
func foreignFixtureUnwalkable(milliseconds: Int) -> Int64 {
    let r = Int64(sw_foreign_unwalkable_spin(UInt32(milliseconds)))
    return foreignFixtureNote(r) &+ 1
}

// MARK: - Cases

/// A pipe nobody writes to until `release`: closing the writer ends the reader's gzread.
final class SilentPipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32
    let closed = Atomic<Bool>(false)

    init() {
        var fds: [Int32] = [-1, -1]
        _ = pipe(&fds)
        readEnd = fds[0]
        writeEnd = fds[1]
    }

    func closeWriter() {
        if !closed.exchange(true, ordering: .acquiringAndReleasing) { close(writeEnd) }
    }

    deinit {
        closeWriter()
        close(readEnd)
    }
}

enum ForeignCases {
    static let ms = foreignStallMilliseconds

    static func pbkdf2() -> ForeignCase {
        ForeignCase(name: "OpenSSL PKCS5_PBKDF2_HMAC", library: "libcrypto.so", allowedBelow: ["libcrypto.so", "libc.so"],
                    entry: ["PKCS5_PBKDF2_HMAC"], cFunction: "sw_foreign_pbkdf2", swiftFunction: "foreignFixturePBKDF2",
                    cause: .cpuBound, run: { foreignFixturePBKDF2(milliseconds: ms) })
    }

    static func sqliteQuery() -> ForeignCase {
        ForeignCase(name: "SQLite recursive CTE", library: "libsqlite3.so", allowedBelow: ["libsqlite3.so", "libc.so"],
                    entry: ["sqlite3_step"], cFunction: "sw_foreign_sqlite_cte", swiftFunction: "foreignFixtureSQLiteQuery",
                    cause: .cpuBound, run: { foreignFixtureSQLiteQuery(milliseconds: ms) })
    }

    static func regexec() -> ForeignCase {
        ForeignCase(name: "glibc regexec", library: "libc.so", allowedBelow: ["libc.so"],
                    entry: ["regexec"], cFunction: "sw_foreign_regexec", swiftFunction: "foreignFixtureRegexec",
                    cause: .cpuBound, run: { foreignFixtureRegexec(milliseconds: ms) })
    }

    static func compress() -> ForeignCase {
        ForeignCase(name: "zlib compress2", library: "libz.so", allowedBelow: ["libz.so", "libc.so"],
                    entry: ["compress2", "compress"], cFunction: "sw_foreign_compress", swiftFunction: "foreignFixtureCompress",
                    cause: .cpuBound, run: { foreignFixtureCompress(milliseconds: ms) })
    }

    static func qsort() -> ForeignCase {
        // qsort tail-calls qsort_r: the entry frame may carry either name. The C comparator
        // (cmp_u32, in the test binary) may be the leaf, called from libc's merge sort.
        ForeignCase(name: "glibc qsort, C comparator", library: "libc.so", allowedBelow: ["libc.so", "cmp_u32"],
                    entry: ["qsort"], cFunction: "sw_foreign_qsort", swiftFunction: "foreignFixtureQsort",
                    cause: .cpuBound, run: { foreignFixtureQsort(milliseconds: ms) })
    }

    static func gzread() -> ForeignCase {
        let pipe = SilentPipe()
        // A read() on a pipe is classified as blocked in a system call (sockets are network I/O).
        return ForeignCase(name: "zlib gzread on a silent pipe", library: "libz.so", allowedBelow: ["libz.so", "libc.so"],
                           entry: ["gzread"], cFunction: "sw_foreign_gzread", swiftFunction: "foreignFixtureGzread",
                           cause: .blockedInSyscall, run: { foreignFixtureGzread(fd: pipe.readEnd) },
                           release: { pipe.closeWriter() })
    }

    static func sqliteBusy() -> ForeignCase {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("sw-busy-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sqlite").path
        return ForeignCase(name: "SQLite busy-wait on a locked database", library: "libsqlite3.so",
                           allowedBelow: ["libsqlite3.so", "libc.so"], entry: ["sqlite3_exec"],
                           cFunction: "sw_foreign_sqlite_busy", swiftFunction: "foreignFixtureSQLiteBusy",
                           cause: .sleeping, run: { foreignFixtureSQLiteBusy(path: path, milliseconds: ms) },
                           cleanup: {
                               for suffix in ["", "-journal", "-wal", "-shm"] { unlink(path + suffix) }
                           })
    }

    static func mallocFree() -> ForeignCase {
        // Each round maps 256 MiB, fills it (memset, page faults) and frees it (munmap): the
        // thread is in libc throughout, in memset or in free.
        ForeignCase(name: "malloc + memset + free of 256 MiB buffers", library: "libc.so", allowedBelow: ["libc.so"],
                    entry: ["free", "memset", "malloc"], cFunction: "sw_foreign_malloc_free", swiftFunction: "foreignFixtureMallocFree",
                    cause: .cpuBound, run: { foreignFixtureMallocFree(milliseconds: ms) })
    }
}

// MARK: - Checks

/// The file name of a frame's module (`libc.so.6`), or "".
func moduleFile(_ module: String?) -> String {
    guard let module else { return "" }
    return module.split(separator: "/").last.map(String.init) ?? module
}

func describe(_ stack: [ReportFrame]) -> String {
    stack.map { f in
        let name = f.symbol ?? "?"
        let module = moduleFile(f.module)
        let offset = f.moduleOffset.map { "+0x" + String($0.value, radix: 16) } ?? ""
        return "\(name) [\(module)\(f.symbol == nil ? offset : "")]"
    }.joined(separator: " <- ")
}

/// Checks one stall report against its case: cause, a frame in the library, and the chain
/// library entry <- C workload <- Swift function, every frame below the workload inside the
/// library (or what it calls), the stack walked to the thread's first frame.
func checkForeignReport(_ report: StallReport, _ c: ForeignCase, sourceLocation: SourceLocation = #_sourceLocation) {
    let stack = report.blamedStack
    logBlamedStack(c.name, report)
    let text = "\(c.name): \(describe(stack)); cause \(report.cause?.kind.rawValue ?? "-"): \(report.cause?.evidence ?? ""); "
        + "truncated \(report.truncatedSampleCount) of \(report.sampleCount) \(report.stackEnds ?? [:])"
    #expect(report.cause?.kind == c.cause, "\(text)", sourceLocation: sourceLocation)
    #expect(stack.contains { moduleFile($0.module).hasPrefix(c.library) }, "no frame in \(c.library): \(text)",
            sourceLocation: sourceLocation)
    let cIndex = stack.firstIndex { $0.symbol?.contains(c.cFunction) == true }
    let swiftIndex = stack.firstIndex { $0.symbol?.contains(c.swiftFunction) == true }
    #expect(swiftIndex != nil, "the Swift caller \(c.swiftFunction) is not named: \(text)", sourceLocation: sourceLocation)
    guard let cIndex, let swiftIndex else {
        Issue.record("the C workload \(c.cFunction) is not named: \(text)", sourceLocation: sourceLocation)
        return
    }
    // Frames chain: the Swift function calls the C workload, which calls the library's entry.
    #expect(swiftIndex == cIndex + 1, "\(c.swiftFunction) is not the caller of \(c.cFunction): \(text)",
            sourceLocation: sourceLocation)
    #expect(cIndex >= 1, "the stack starts at the C workload, not inside the library: \(text)", sourceLocation: sourceLocation)
    if cIndex >= 1 {
        let entry = stack[cIndex - 1].symbol ?? ""
        #expect(c.entry.contains { entry.contains($0) }, "the frame called by \(c.cFunction) is \(entry), not \(c.entry): \(text)",
                sourceLocation: sourceLocation)
        // Nothing below the workload from elsewhere: no stale return address, no handler frame.
        let strangers = stack[..<(cIndex - 1)].filter { f in
            let file = moduleFile(f.module)
            return !c.allowedBelow.contains { file.hasPrefix($0) || (f.symbol?.contains($0) ?? false) }
        }
        #expect(strangers.isEmpty, "frames that do not chain: \(describe(Array(strangers))) in \(text)",
                sourceLocation: sourceLocation)
    }
    // Walked to its root: the thread's first frame is there.
    let names = stack.compactMap(\.symbol)
    #expect(names.contains("start_thread") || names.contains { $0.hasPrefix("asan_thread_start") },
            "not walked to the thread's first frame: \(text)", sourceLocation: sourceLocation)
}

/// With STALLWATCH_TEST_STACKS set, prints each checked report's blamed stack (for comparing
/// unwinders across commits); silent otherwise.
func logBlamedStack(_ name: String, _ report: StallReport) {
    guard getenv("STALLWATCH_TEST_STACKS") != nil else { return }
    let line = "STACK \(name) [\(report.loopName ?? "")] cause=\(report.cause?.kind.rawValue ?? "-") samples=\(report.sampleCount) "
        + "truncated=\(report.truncatedSampleCount) ends=\(report.stackEnds ?? [:]): \(describe(report.blamedStack))\n"
    FileHandle.standardError.write(Data(line.utf8))
}

/// Report summaries for failure messages.
func summaries(_ reports: [StallReport]) -> String {
    reports.map { "[\($0.loopName ?? "") seq \($0.sequenceInStall) \($0.cause?.kind.rawValue ?? "-") ends \($0.stackEnds ?? [:]): \(describe(Array($0.blamedStack.prefix(14))))]" }
        .joined(separator: "\n")
}

extension EventLog {
    /// How many stalls were dropped as trivial stacks.
    var trivialStackFilterings: Int {
        events.withLock { $0.filter { $0.filterReason?.kind == .trivialStack }.count }
    }
}

/// Runs the case on a heartbeat-probed thread watched by a fresh watchdog (500 ms threshold);
/// returns the events once the stall has ended.
func watchForeignOnProbedThread(_ c: ForeignCase, reportDirectory: String? = nil,
                                sampleInterval: Duration? = nil) throws -> (EventLog, Int64) {
    let log = EventLog()
    // The ring's capacity follows the interval only when the configuration is made with it.
    let configuration = sampleInterval.map {
        WatchdogConfiguration(threshold: .milliseconds(500), sampleInterval: $0, watchPoolJobs: false)
    } ?? .watchingOwnLoops(threshold: .milliseconds(500))
    let watchdog = try Watchdog(configuration: configuration,
                                reportDirectory: reportDirectory, metrics: nil) { log.append($0) }
    let probe = watchdog.makeProbe(name: "foreign-loop")
    try watchdog.start()
    defer { watchdog.stop() }
    let result = Atomic<Int64>(0)
    let worker = TestThread(name: "sw-foreign") { _ in
        probe.busy()
        result.store(c.run(), ordering: .releasing)
        probe.idle()
    }
    if let release = c.release {
        sleepWhole(milliseconds: foreignStallMilliseconds)
        release()
    }
    worker.stopAndJoin(timeout: .seconds(15))
    _ = eventually(timeout: .seconds(2)) { !log.ended.isEmpty }
    return (log, result.load(ordering: .acquiring))
}

/// Sleeps the whole time even when a signal ends a sleep early. A thread started from a pool job
/// bears a worker's name, so the pool's watcher signals it once when it first finds it running; a
/// signal that met it asleep would end a plain `usleep` there and release the stall early.
func sleepWhole(milliseconds: Int) {
    var deadline = timespec()
    clock_gettime(CLOCK_MONOTONIC, &deadline)
    let ns = Int(deadline.tv_nsec) + (milliseconds % 1000) * 1_000_000
    deadline.tv_sec += milliseconds / 1000 + ns / 1_000_000_000
    deadline.tv_nsec = ns % 1_000_000_000
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nil) == EINTR {}
}

/// Runs the case as a detached task on the cooperative pool, watched by a fresh watchdog (pool
/// jobs watched, a ping on the pool, 500 ms threshold); the caller awaits, never blocks.
func watchForeignAsPoolJob(_ c: ForeignCase) async throws -> (EventLog, Int64) {
    let log = EventLog()
    let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: .milliseconds(500))) { log.append($0) }
    watchdog.monitor(PingProbe.cooperativePool())
    try watchdog.start()
    defer { watchdog.stop() }
    if let release = c.release {
        // A plain thread releases it: the pool may have no thread to spare.
        Thread.detachNewThread {
            sleepWhole(milliseconds: foreignStallMilliseconds)
            release()
        }
    }
    let result = await Task.detached { c.run() }.value
    try await Task.sleep(for: .milliseconds(400))
    return (log, result)
}

// MARK: - Tests

@Suite("Stalls inside libraries without frame pointers", .serialized)
struct ForeignLibraryStallTests {
    static let names = ["pbkdf2", "sqliteQuery", "regexec", "compress", "qsort", "gzread", "sqliteBusy", "mallocFree"]

    static func make(_ name: String) -> ForeignCase {
        switch name {
        case "pbkdf2": ForeignCases.pbkdf2()
        case "sqliteQuery": ForeignCases.sqliteQuery()
        case "regexec": ForeignCases.regexec()
        case "compress": ForeignCases.compress()
        case "qsort": ForeignCases.qsort()
        case "gzread": ForeignCases.gzread()
        case "sqliteBusy": ForeignCases.sqliteBusy()
        default: ForeignCases.mallocFree()
        }
    }

    @Test("on a heartbeat-probed thread: one report, its cause, a frame in the library, the Swift caller named, every frame chained",
          arguments: names)
    func probedThread(_ name: String) throws {
        let c = Self.make(name)
        let failuresBefore = foreignFailures.load(ordering: .relaxed)
        let (log, result) = try watchForeignOnProbedThread(c)
        c.release?()
        c.cleanup?()
        #expect(result > 0 && foreignFailures.load(ordering: .relaxed) == failuresBefore, "the workload failed: \(result)")
        #expect(log.stalls.count == 1, "\(c.name): \(log.stalls.count) reports, \(log.trivialStackFilterings) trivial-stack filterings\n\(summaries(log.stalls))")
        let report = try #require(log.stalls.first, "\(c.name): no report; \(log.trivialStackFilterings) trivial-stack filterings")
        #expect(report.loopName == "foreign-loop")
        checkForeignReport(report, c)
    }

    @Test("as a detached pool job: one report, its cause, a frame in the library, the Swift caller named, every frame chained",
          arguments: names)
    func poolJob(_ name: String) async throws {
        let c = Self.make(name)
        let failuresBefore = foreignFailures.load(ordering: .relaxed)
        let (log, result) = try await watchForeignAsPoolJob(c)
        c.release?()
        c.cleanup?()
        #expect(result > 0 && foreignFailures.load(ordering: .relaxed) == failuresBefore, "the workload failed: \(result)")
        let reports = log.allStalls(through: c.cFunction).job
        #expect(reports.count == 1, "\(c.name): \(reports.count) reports, \(log.trivialStackFilterings) trivial-stack filterings\n\(summaries(reports))")
        let report = try #require(reports.first, "\(c.name): no report; \(log.trivialStackFilterings) trivial-stack filterings; events: \(log.events.withLock { $0.map { "\($0.kind) \($0.message ?? "")" } })")
        #expect(report.loopName == PoolJobWatcher.loopName)
        checkForeignReport(report, c)
    }

    @Test("free of large buffers reaches its caller: samples in free/munmap chain to the Swift function")
    func freeReachesCaller() throws {
        let c = ForeignCases.mallocFree()
        // Nodes in free or munmap, and whether the path from each up to the root passes through
        // the workload and its Swift caller.
        func inFree(_ node: ReportCallTreeNode) -> Bool {
            let s = node.symbol ?? ""
            return s == "free" || s == "__libc_free" || s == "cfree" || s.contains("munmap")
        }
        // The stored report, final: the event's first version holds only the samples up to the
        // threshold. About 94 % of each round is memset's page faults and 6 % the munmap (110 ms
        // against 6 ms here): at the default 50 ms, a stall's ~20 samples all missed the munmap in
        // 3 stalls running once in CI. Sampled every 10 ms (~100 samples a stall) and run up to 4
        // times, a miss is left to chance no more: which samples land there is chance, how they
        // are walked is what is checked.
        var report: StallReport?
        for attempt in 1...4 {
            let directory = temporaryDirectory("free-\(attempt)")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let (log, _) = try watchForeignOnProbedThread(c, reportDirectory: directory, sampleInterval: .milliseconds(10))
            let stored = storedReports(directory).filter { $0.durationIsFinal }
            let first = try #require(stored.first, "no final stored report; \(log.stalls.count) stall events, \(log.trivialStackFilterings) trivial-stack filterings")
            report = first
            if first.callTree.contains(where: inFree) { break }
        }
        let final = try #require(report)
        let tree = final.callTree
        let freeNodes = tree.indices.filter { inFree(tree[$0]) }
        func path(_ i: Int) -> [String] {
            var out: [String] = []
            var j = i
            while j >= 0 && j < tree.count {
                out.append(tree[j].symbol ?? "?")
                j = tree[j].parent
            }
            return out
        }
        let paths = freeNodes.map(path)
        #expect(!freeNodes.isEmpty, "no sample in free/munmap among \(final.sampleCount), 4 stalls: \(describe(final.blamedStack))")
        let chained = paths.filter { p in
            guard let ci = p.firstIndex(where: { $0.contains(c.cFunction) }) else { return false }
            return ci + 1 < p.count && p[ci + 1].contains(c.swiftFunction)
        }
        #expect(!paths.isEmpty && chained.count == paths.count,
                "paths through free/munmap that do not reach \(c.swiftFunction): \(paths.filter { p in !chained.contains(p) }.map { $0.prefix(8).joined(separator: " <- ") })")
    }
}

/// A stack no unwinder can walk to its root (a function without unwind information whose frame
/// pointer is garbage) must not be taken for a trivial one: the stall is reported, truncated,
/// with the reason.
@Suite("A stall whose stack cannot be walked", .serialized)
struct ForeignLibraryUnwalkableStackTests {
    static func unwalkable() -> ForeignCase {
        ForeignCase(name: "spin without unwind info, garbage frame pointer", library: "", allowedBelow: [],
                    entry: [], cFunction: "sw_foreign_unwalkable_spin", swiftFunction: "foreignFixtureUnwalkable",
                    cause: .cpuBound, run: { foreignFixtureUnwalkable(milliseconds: foreignStallMilliseconds) })
    }

    static let knownEnds: Set<String> = ["badLink", "noUnwindInfo", "unreadable"]

    func check(_ report: StallReport, _ log: EventLog) throws {
        let stack = report.blamedStack
        logBlamedStack("unwalkable", report)
        let text = "\(describe(stack)); cause \(report.cause?.kind.rawValue ?? "-"); truncated \(report.truncatedSampleCount) of \(report.sampleCount) \(report.stackEnds ?? [:])"
        #expect(report.cause?.kind == .cpuBound, "\(text)")
        // What is known is there: the spinning function, named from the test binary's symbols.
        #expect(stack.first?.symbol?.contains("sw_foreign_spin_no_unwind_info") == true, "\(text)")
        // And the report says the stack is cut, and why.
        #expect(report.truncatedSampleCount > 0, "\(text)")
        let ends = report.stackEnds ?? [:]
        #expect(ends.contains { Self.knownEnds.contains($0.key) && $0.value > 0 }, "no reason given for the cut: \(text)")
        #expect(ends["root"] == nil, "\(text)")
        // The JSON a reader gets says so as well.
        let json = String(decoding: try JSONEncoder().encode(report), as: UTF8.self)
        #expect(json.contains("\"stackEnds\""), "\(json.prefix(400))")
    }

    @Test("on a heartbeat-probed thread: reported (not filtered as trivial), truncated, with the reason")
    func probedThread() throws {
        let c = Self.unwalkable()
        let (log, result) = try watchForeignOnProbedThread(c)
        #expect(result > 0, "the spin could not run: \(result)")
        #expect(log.trivialStackFilterings == 0, "a stack that was not walked to its root was filtered as trivial")
        #expect(log.stalls.count == 1, "\(log.stalls.count) reports\n\(summaries(log.stalls))")
        let report = try #require(log.stalls.first)
        try check(report, log)
    }

    @Test("as a detached pool job: reported (not filtered, not lost), truncated, with the reason")
    func poolJob() async throws {
        let c = Self.unwalkable()
        let (log, result) = try await watchForeignAsPoolJob(c)
        #expect(result > 0, "the spin could not run: \(result)")
        #expect(log.trivialStackFilterings == 0, "a stack that was not walked to its root was filtered as trivial")
        let reports = log.allStalls(through: "sw_foreign_spin_no_unwind_info").job
        #expect(reports.count == 1, "\(reports.count) reports\n\(summaries(reports))")
        let report = try #require(reports.first)
        #expect(report.loopName == PoolJobWatcher.loopName)
        try check(report, log)
    }
}
