import Foundation
import Glibc
import StallwatchPolicy
import StallwatchReport
import StallwatchExport
import Testing
@testable import Stallwatch

/// The `stallwatch` command run as a person would, on bad input and on a real stall: every failure
/// is one line on standard error and a non-zero exit, never a trap or a hang.
@Suite("stallwatch command", .serialized)
struct CommandLineTests {
    /// Runs `stallwatch` and checks the failure is one clear line (ArgumentParser adds "Error: ").
    func expectOneLineFailure(_ arguments: [String], mentioning: String,
                              sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try ExternalTool.stallwatch().run(arguments, timeout: .seconds(30))
        #expect(result.exited, "killed by a signal: \(arguments)", sourceLocation: sourceLocation)
        #expect(result.status != 0, "\(arguments) succeeded", sourceLocation: sourceLocation)
        let lines = result.stderr.split(separator: "\n").filter { !$0.hasPrefix("Usage:") && !$0.hasPrefix("  See ") && !$0.isEmpty }
        #expect(lines.count == 1, "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(mentioning), "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(!result.stderr.contains("NSCocoaErrorDomain") && !result.stderr.contains("permission"),
                "\(result.stderr)", sourceLocation: sourceLocation)
    }

    @Test("a FIFO, a device and a directory are refused, each saying what it is")
    func notRegularFiles() throws {
        let dir = try scratchDirectory("cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fifo = "\(dir)/fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        for command in ["show", "pprof", "otlp-profile", "flame", "fold"] {
            try expectOneLineFailure([command, fifo], mentioning: "is a FIFO, not a report file")
            try expectOneLineFailure([command, "/dev/null"], mentioning: "is a character device, not a report file")
            try expectOneLineFailure([command, dir], mentioning: "is a directory, not a report file")
            try expectOneLineFailure([command, "\(dir)/absent.json"], mentioning: "cannot read \(dir)/absent.json: No such file")
        }
        try expectOneLineFailure(["list", fifo], mentioning: "is not a directory")
        try expectOneLineFailure(["list", "\(dir)/absent"], mentioning: "No such file")
    }

    @Test("a newer schema is refused in one line naming both versions; damaged JSON in one line")
    func badReports() throws {
        let dir = try scratchDirectory("cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let future = "\(dir)/future.json"
        let report = StallReport(kind: .stall, id: "x", startTimeUnixNanoseconds: 0, duration: .seconds(1),
                                 durationIsFinal: true, threadCount: 1, configuration: WatchdogConfiguration())
        var object = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any])
        object["schemaVersion"] = 999
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: future))
        try expectOneLineFailure(["show", future], mentioning: "has report schema 999; this stallwatch reads schemas 1...2")
        let damaged = "\(dir)/damaged.json"
        try Data("{\"schemaVersion\": 2, \"kind\": \"stall\"".utf8).write(to: URL(fileURLWithPath: damaged))
        try expectOneLineFailure(["show", damaged], mentioning: "is not a Stallwatch report")
        object["schemaVersion"] = 2
        object["blamedStack"] = "not a list"
        try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: damaged))
        try expectOneLineFailure(["pprof", "-o", "\(dir)/out.pb.gz", damaged], mentioning: "at blamedStack")
    }

    @Test("a file larger than a report can be is refused without reading it")
    func oversized() throws {
        let dir = try scratchDirectory("cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let big = "\(dir)/big.json"
        // Sparse: 200 MB of nothing costs no disk and no time.
        let fd = open(big, O_CREAT | O_WRONLY, 0o600)
        #expect(ftruncate(fd, 200_000_000) == 0)
        close(fd)
        try expectOneLineFailure(["show", big], mentioning: "is 200000000 bytes, more than a report can be")
    }

    @Test("demo refuses durations it cannot sleep (5000 s, inf, nan, 1e10) instead of trapping")
    func demoDurations() throws {
        try expectOneLineFailure(["demo", "--seconds", "5000000"], mentioning: "--seconds must be")
        try expectOneLineFailure(["demo", "--seconds", "inf"], mentioning: "--seconds must be")
        try expectOneLineFailure(["demo", "--seconds", "nan"], mentioning: "--seconds must be")
        try expectOneLineFailure(["demo", "--stall-seconds", "1e10"], mentioning: "--stall-seconds must be")
        try expectOneLineFailure(["demo", "--stall-seconds=-1"], mentioning: "--stall-seconds must be")
        // A long but valid run used to trap converting 5000 s to microseconds right after its
        // stall; now it is still running when stopped (SIGTERM, or SIGKILL when SIGTERM is blocked
        // by the mask it inherits), not killed by SIGILL.
        let long = try ExternalTool.stallwatch().run(["demo", "--seconds", "5000", "--stall-seconds", "0.1"], timeout: .seconds(4))
        #expect(!long.exited && [SIGTERM, SIGKILL].contains(long.status), "exited: \(long.exited), status/signal \(long.status): \(long.stderr)")
    }

    @Test("show escapes control characters in every name, prints the final duration and, on request, other threads' stacks")
    func showIsTerminalSafe() throws {
        let dir = try scratchDirectory("cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let evil = "evil\u{1b}[2J\u{1b}]0;pwned\u{7}"
        let frame = ReportFrame(address: 0x1000, info: SymbolInfo(module: "/srv/app\u{1b}[31m", moduleOffset: 0x10, symbol: evil), sampleCount: 3)
        let other = ThreadStack(thread: ThreadIdentity(id: 7, name: "w\u{1b}[2Jorker"), state: "S", syscall: 202,
                                frames: [ReportFrame(address: 0x2000, info: SymbolInfo(symbol: "deep\u{1b}c"), sampleCount: 1),
                                         ReportFrame(address: 0x3000, info: SymbolInfo(symbol: "outer\u{9b}2J"), sampleCount: 1)])
        let stalledNeighbour = ThreadStack(thread: ThreadIdentity(id: 8, name: "loop-2"), state: "R",
                                           frames: [ReportFrame(address: 0x4000, info: SymbolInfo(symbol: "spin"), sampleCount: 1)],
                                           stackAgeNanoseconds: 120_000_000)
        var report = StallReport(kind: .stall, id: "id\u{1b}[2J", cause: StallCause(kind: .lockWait, evidence: "ev\u{1b}[2J"),
                                 loopName: "loop\u{1b}[2J", thread: ThreadIdentity(id: 42, name: "name\u{1b}[2J\r"),
                                 startTimeUnixNanoseconds: 1_700_000_000_000_000_000, duration: .milliseconds(1552),
                                 durationIsFinal: true, sampleCount: 3, blamedStack: [frame],
                                 callTree: [ReportCallTreeNode(parent: -1, address: 0x1000, symbol: evil, module: "/srv/app", count: 3, selfCount: 3)],
                                 otherThreads: [other, stalledNeighbour], threadCount: 3, configuration: WatchdogConfiguration())
        report.sampleCount = 3
        report.request = ReportRequest(method: "GET", route: "/r\u{1b}[2J/:id", traceID: "4bf9", spanID: "00f0", sampleCount: 2)
        let path = "\(dir)/evil.json"
        try JSONEncoder().encode(report).write(to: URL(fileURLWithPath: path))
        let tool = try ExternalTool.stallwatch()
        for arguments in [["show", path], ["show", "--threads", path], ["fold", path], ["list", dir]] {
            let result = try tool.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            let controls = result.stdout.filter { $0 < 0x20 && $0 != 0x0a }
            #expect(controls.isEmpty, "\(arguments) wrote control bytes \(controls)")
            #expect(!result.output.unicodeScalars.contains { (0x80...0x9f).contains($0.value) }, "\(arguments): C1 control written")
            #expect(result.output.contains("\\x1b[2J"), "\(arguments): \(result.output)")
        }
        let shown = try tool.run(["show", "--threads", path]).output
        #expect(shown.contains("lasted 1552.0 ms (final"), "\(shown)")
        #expect(shown.contains("request: GET /r\\x1b[2J/:id trace 4bf9 span 00f0 (2 of 3 samples)"), "\(shown)")
        #expect(shown.contains("name\\x1b[2J\\x0d"), "the whole thread name: \(shown)")
        #expect(shown.contains("deep\\x1bc") && shown.contains("outer\\x9b2J"), "every frame of the other thread: \(shown)")
        #expect(!(try tool.run(["show", path]).output.contains("outer")), "only the top frame without --threads")
        #expect(shown.contains("8 \"loop-2\" [R; stack sampled 120 ms before, in its own stall]"), "a stalled neighbour's stack says its age: \(shown)")
    }

    @Test("pprof, flame and list on a real stall; list puts one line per distinct stall, most total time first")
    func realStall() throws {
        let dir = try scratchDirectory("cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = try LockStall.file(in: dir)
        let report = try LockStall.report.get()
        let tool = try ExternalTool.stallwatch()
        let pprof = try tool.run(["pprof", "-o", "\(dir)/stall.pb.gz", path])
        #expect(pprof.status == 0, "\(pprof.stderr)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/stall.pb.gz"))
        #expect(try Compression.inflate(Array(bytes), limit: 1 << 24) == PprofEncoder.encode(StallProfile(reports: [report])))
        let flame = try tool.run(["flame", path])
        #expect(flame.status == 0, "\(flame.stderr)")
        #expect(flame.output.hasPrefix("<?xml") && flame.output.contains("</svg>"))

        // A second, longer stall with a different stack, and the first one's earlier (shorter) write.
        var other = report
        other.id = "other-1"
        other.durationNanoseconds = report.durationNanoseconds * 3
        other.blamedStack = [ReportFrame(address: 0x10, info: SymbolInfo(module: "/srv/app", symbol: "Other.work()"), sampleCount: 1)]
        var earlier = report
        earlier.durationNanoseconds = report.durationNanoseconds / 2
        earlier.durationIsFinal = false
        try JSONEncoder().encode(other).write(to: URL(fileURLWithPath: "\(dir)/other.json"))
        try JSONEncoder().encode(earlier).write(to: URL(fileURLWithPath: "\(dir)/earlier.json"))
        try Data("not json".utf8).write(to: URL(fileURLWithPath: "\(dir)/junk.json"))
        let list = try tool.run(["list", dir])
        #expect(list.status == 0, "\(list.stderr)")
        let lines = list.output.split(separator: "\n")
        #expect(lines.count == 4, "header, two stalls, one unreadable file: \(list.output)")
        #expect(lines.count > 2 && lines[1].contains("Other.work()") && lines[2].contains("stallwatchFixtureLockWait"), "\(list.output)")
        #expect(lines.count > 2 && lines[2].contains(" 1  ") && lines[2].contains(path), "counted once, newest file: \(list.output)")
    }

    @Test("show names frames the report left as module + offset, from the module's symbols by build id")
    func lateSymbolization() throws {
        let dir = try scratchDirectory("late")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var report = try LockStall.report.get()
        // As if libc had had no symbols when the stall was written: module, offset and build id only.
        var stripped: [String] = []
        for i in report.blamedStack.indices where report.blamedStack[i].module?.contains("libc.so") == true {
            if let name = report.blamedStack[i].symbol, report.blamedStack[i].buildID != nil { stripped.append(name) }
            report.blamedStack[i].symbol = nil
        }
        try #require(!stripped.isEmpty, "the lock stall has libc frames: \(report.blamedStack.map(\.symbol))")
        // And one frame whose build id no longer matches the file: never named from it.
        var wrongID = report.blamedStack.first { $0.module?.contains("libc.so") == true }
        wrongID?.buildID = "00ff"
        if let wrongID { report.blamedStack.append(wrongID) }
        let path = "\(dir)/stripped.json"
        try JSONEncoder().encode(report).write(to: URL(fileURLWithPath: path))
        let shown = try ExternalTool.stallwatch().run(["show", "--all-frames", path])
        #expect(shown.status == 0, "\(shown.stderr)")
        for name in stripped { #expect(shown.output.contains(name), "\(name) named again: \(shown.output)") }
        #expect(shown.output.split(separator: "\n").last { $0.contains("libc.so.6+0x") } != nil,
                "the frame with a foreign build id stays module + offset: \(shown.output)")
    }

    @Test("show leads with the service's frame: Vapor's bcrypt frames are the leaf, the route is the summary; the frames below it are folded unless asked for")
    func serviceFrameFirst() throws {
        let dir = try scratchDirectory("service")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let exe = "/srv/app/.build/debug/VaporServer"
        let frames: [(String, String)] = [
            ("Vapor_Blowfish_expandstate", exe), ("vapor_bcrypt_hashpass", exe),
            ("Vapor.BCryptDigest.hash(_: Swift.String, cost: Swift.Int) throws -> Swift.String", exe),
            ("closure #3 (Vapor.Request) async throws -> Swift.String in VaporServer.addRoutes(to: Vapor.Application) -> ()", exe),
            ("protocol witness for Vapor.AsyncResponder.respond(to: Vapor.Request) async throws -> Vapor.Response in conformance Vapor.AsyncBasicResponder : Vapor.AsyncResponder in Vapor", exe),
            ("NIOCore.EventLoopPromise.completeWithTask(@Sendable () async throws -> A) -> ()", exe),
            ("swift::runJobInEstablishedExecutorContext(swift::Job*)", "/usr/lib/swift/linux/libswift_Concurrency.so"),
            ("start_thread", "/lib/x86_64-linux-gnu/libc.so.6"),
        ]
        let stack = frames.enumerated().map { i, f in
            ReportFrame(address: UInt64(0x1000 + i), info: SymbolInfo(module: f.1, moduleOffset: UInt64(0x10 + i), symbol: f.0), sampleCount: 4)
        }
        let report = StallReport(kind: .stall, id: "bcrypt", loopName: "cooperative-pool-job", startTimeUnixNanoseconds: 0,
                                 duration: .milliseconds(900), durationIsFinal: true, sampleCount: 4, blamedStack: stack,
                                 threadCount: 4, configuration: WatchdogConfiguration())
        let path = "\(dir)/bcrypt.json"
        try JSONEncoder().encode(report).write(to: URL(fileURLWithPath: path))
        let tool = try ExternalTool.stallwatch()
        let shown = try tool.run(["show", path])
        #expect(shown.status == 0, "\(shown.stderr)")
        let lines = shown.output.split(separator: "\n").map(String.init)
        let blamed = try #require(lines.first { $0.hasPrefix("blamed: ") }, "\(shown.output)")
        #expect(blamed.hasPrefix("blamed: closure #3 (Vapor.Request) async throws -> Swift.String in VaporServer.addRoutes"), "\(blamed)")
        #expect(shown.output.contains("Vapor_Blowfish_expandstate"), "what the route called, to the leaf, is printed: \(shown.output)")
        #expect(lines.contains { $0.contains("…  4 frames of Vapor, NIOCore, libswift_Concurrency.so, libc.so.6 (--all-frames prints them)") },
                "the frames below the route are folded into one line: \(shown.output)")
        #expect(!shown.output.contains("start_thread"), "\(shown.output)")
        let all = try tool.run(["show", "--all-frames", path])
        #expect(all.status == 0 && all.output.contains("start_thread") && !all.output.contains("--all-frames prints them"), "\(all.output)")
    }
}
