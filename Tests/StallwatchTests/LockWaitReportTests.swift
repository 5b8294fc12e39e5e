import Foundation
import StallwatchReport
import Testing

/// The lock wait as a reader meets it: in the report's JSON (additive: an older file without it
/// still reads) and in `stallwatch show`.
@Suite("Lock wait in reports", .serialized)
struct LockWaitReportTests {
    static func stack(_ id: Int32, _ name: String, _ symbol: String) -> ThreadStack {
        ThreadStack(thread: ThreadIdentity(id: id, name: name), state: "S", syscall: 202,
                    frames: [ReportFrame(address: 0x4000, info: SymbolInfo(symbol: "__lll_lock_wait"), sampleCount: 1),
                             ReportFrame(address: 0x5000, info: SymbolInfo(symbol: symbol), sampleCount: 1)])
    }

    static var deadlockReport: StallReport {
        let a = ThreadIdentity(id: 41, name: "loop-a"), b = ThreadIdentity(id: 42, name: "loop-b")
        let chain = [LockWaitLink(waiter: a, lockAddress: 0x7f00_1000, primitive: .pthreadMutex, holder: stack(42, "loop-b", "transfer")),
                     LockWaitLink(waiter: b, lockAddress: 0x7f00_2000, primitive: .pthreadMutex, holder: stack(41, "loop-a", "audit"))]
        var report = StallReport(kind: .stall, id: "dl", cause: StallCause(kind: .deadlock, evidence: "state S in futex"),
                                 loopName: "loop-a", thread: a, startTimeUnixNanoseconds: 0, duration: .seconds(1),
                                 durationIsFinal: true, threadCount: 3, configuration: WatchdogConfiguration())
        report.lockWait = LockWaitFacts(lockAddress: 0x7f00_1000, primitive: .pthreadMutex, ownership: .held, holder: chain[0].holder,
                                        ownerStable: true, summary: "deadlock: waiting on a lock held by thread 42 (loop-b), which is in transfer",
                                        chain: chain, deadlock: true)
        return report
    }

    @Test("the lock wait round-trips through JSON, its address as a 0x string; a file without it still reads")
    func json() throws {
        let report = Self.deadlockReport
        let data = try JSONEncoder().encode(report)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"lockAddress\":\"0x7f001000\""), "\(text)")
        #expect(text.contains("\"kind\":\"deadlock\""))
        #expect(try JSONDecoder().decode(StallReport.self, from: data) == report)
        var older = report
        older.lockWait = nil
        let without = try JSONEncoder().encode(older)
        #expect(!String(decoding: without, as: UTF8.self).contains("lockWait"))
        #expect(try JSONDecoder().decode(StallReport.self, from: without).lockWait == nil)
    }

    @Test("stallwatch show prints the sentence, the lock and every holder's stack")
    func show() throws {
        let dir = try scratchDirectory("lockwait")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = "\(dir)/deadlock.json"
        try JSONEncoder().encode(Self.deadlockReport).write(to: URL(fileURLWithPath: path))
        let result = try ExternalTool.stallwatch().run(["show", path])
        #expect(result.status == 0, "\(result.stderr)")
        let shown = result.output
        #expect(shown.contains("cause: deadlock"), "\(shown)")
        #expect(shown.contains("lock: deadlock: waiting on a lock held by thread 42 (loop-b), which is in transfer"), "\(shown)")
        #expect(shown.contains("pthreadMutex at 0x7f001000, held"), "\(shown)")
        #expect(shown.contains("waits on 0x7f001000, held by 42 \"loop-b\" [S syscall 202]:"), "\(shown)")
        #expect(shown.contains("waits on 0x7f002000, held by 41 \"loop-a\" [S syscall 202]:"), "\(shown)")
        #expect(shown.contains("transfer") && shown.contains("audit"), "both stacks: \(shown)")
    }
}
