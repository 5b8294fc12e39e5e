import Foundation
import Stallwatch
import StallwatchPolicy
import StallwatchReport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct ReportStoreTests {
    /// A fresh directory path (not yet created) under the system temporary directory.
    private static func scratch() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("report-store-\(UUID().uuidString)").path
    }

    private static func report(_ id: String, padding: Int = 0) -> StallReport {
        StallReport(
            kind: .stall, id: id, loopName: String(repeating: "x", count: padding),
            startTimeUnixNanoseconds: 1_700_000_000_000_000_000, duration: .seconds(3), durationIsFinal: true,
            blamedStack: [ReportFrame(address: 0x1234, info: SymbolInfo(symbol: "f()"), sampleCount: 20)],
            threadCount: 3, configuration: WatchdogConfiguration())
    }

    private static let day: TimeInterval = 86_400
    private static func date(_ seconds: TimeInterval) -> Date { Date(timeIntervalSince1970: 1_700_000_000 + seconds) }

    private func mode(_ path: String) -> mode_t {
        var info = stat()
        #expect(stat(path, &info) == 0)
        return info.st_mode & 0o777
    }

    @Test("retention goes by file time: a file named in the future still expires")
    func retentionByFileTime() throws {
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = ReportStore(directory: dir)
        let real = try store.write(Self.report("real"), now: Self.date(0))
        // A report whose name claims the year 2100, last written 11 days before now.
        let future = dir + "/sw-0004102444800000-stall-planted.json"
        try Data("{}".utf8).write(to: URL(fileURLWithPath: future))
        var old = [timespec(tv_sec: Int(Self.date(-11 * Self.day).timeIntervalSince1970), tv_nsec: 0),
                   timespec(tv_sec: Int(Self.date(-11 * Self.day).timeIntervalSince1970), tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, future, &old, 0) == 0)
        let removed = try store.prune(now: Self.date(1))
        #expect(removed == [future])
        #expect(try store.storedReports().map(\.path) == [real])
    }

    @Test("a directory other users can write is refused with a message, unless allowed")
    func sharedDirectoryRefused() throws {
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect(mkdir(dir, 0o777) == 0)
        #expect(chmod(dir, 0o777) == 0)
        #expect(throws: ReportStoreError.directoryWritableByOthers(path: dir, mode: UInt32(S_IFDIR) | 0o777)) {
            try ReportStore(directory: dir).write(Self.report("x"))
        }
        #expect("\(ReportStoreError.directoryWritableByOthers(path: dir, mode: 0o40777))".contains("chmod go-w"))
        let shared = ReportStore(directory: dir, limits: ReportStoreLimits(allowSharedDirectory: true))
        #expect(throws: Never.self) { try shared.write(Self.report("x")) }
    }

    @Test("files of another owner are never deleted, even over the limits")
    func othersFilesKept() throws {
        try #require(geteuid() == 0, "needs root to give a file to another user")
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = ReportStore(directory: dir, limits: ReportStoreLimits(maxCount: 1))
        let theirs = try store.write(Self.report("theirs"), now: Self.date(0))
        #expect(chown(theirs, 65534, 65534) == 0) // nobody
        let mine = try store.write(Self.report("mine"), now: Self.date(1))
        #expect(FileManager.default.fileExists(atPath: theirs))
        #expect(try store.storedReports().map(\.path) == [mine])
    }

    @Test("temporary files of writers that died are swept; a live writer's are kept")
    func sweepsCrashLeftovers() throws {
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = ReportStore(directory: dir)
        _ = try store.write(Self.report("a"), now: Date())
        // No process has pid 2^22 + 1 (above Linux's pid_max ceiling): its writer is gone.
        let dead = dir + "/.sw-tmp-4194305-7-sw-0000000000000001-stall-x.json"
        let live = dir + "/.sw-tmp-\(getpid())-7-sw-0000000000000001-stall-y.json"
        try Data("{".utf8).write(to: URL(fileURLWithPath: dead))
        try Data("{".utf8).write(to: URL(fileURLWithPath: live))
        #expect(store.sweepTemporaryFiles() == [dead])
        #expect(FileManager.default.fileExists(atPath: live))
        _ = try store.write(Self.report("b"), now: Date().addingTimeInterval(7200))
        #expect(!FileManager.default.fileExists(atPath: live), "an hour-old temporary file is stale")
    }

    @Test("replacing a report rewrites its own file: one file, new content, still 0600")
    func replacesInPlace() throws {
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = ReportStore(directory: dir)
        var first = Self.report("stall-1")
        first.durationIsFinal = false
        let path = try store.write(first, now: Self.date(0))
        var final = first
        final.durationIsFinal = true
        final.durationNanoseconds = 7_000_000_000
        let again = try store.write(final, replacing: path, now: Self.date(5))
        #expect(again == path)
        #expect(try store.storedReports().map(\.path) == [path])
        #expect(try store.read(path) == final)
        #expect(mode(path) == 0o600)
        // Evicted meanwhile, or another report's file: a new file instead.
        unlink(path)
        let fresh = try store.write(final, replacing: path, now: Self.date(6))
        #expect(try store.read(fresh) == final)
        let other = try store.write(Self.report("other"), replacing: fresh, now: Self.date(7))
        #expect(other != fresh)
        #expect(try store.storedReports().count == 2)
    }

    @Test func roundTripsThroughTheFile() throws {
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = ReportStore(directory: dir)
        let path = try store.write(Self.report("a/b c"), now: Self.date(0))
        #expect(path.hasPrefix(dir + "/sw-"))
        #expect(path.hasSuffix("-stall-a_b_c.json"))
        #expect(try store.read(path) == Self.report("a/b c"))
        #expect(try store.storedReports().map(\.path) == [path])
    }

    @Test func filesAre0600AndNewDirectories0700() throws {
        let root = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let dir = root + "/nested/reports"
        let path = try ReportStore(directory: dir).write(Self.report("p"), now: Self.date(0))
        #expect(mode(path) == 0o600)
        #expect(mode(dir) == 0o700)
        #expect(mode(root + "/nested") == 0o700)
    }

    @Test func evictsOldestByCount() throws {
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = ReportStore(directory: dir, limits: ReportStoreLimits(maxCount: 3))
        for index in 0..<5 {
            try store.write(Self.report("r\(index)"), now: Self.date(TimeInterval(index)))
        }
        let kept = try store.storedReports().map { try store.read($0.path).id }
        #expect(kept == ["r2", "r3", "r4"])
    }

    @Test func evictsOldestByBytes() throws {
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let probe = ReportStore(directory: dir)
        let size = try #require(try probe.storedReports(for: probe.write(Self.report("size", padding: 1000), now: Self.date(0))))
        try probe.prune(now: Self.date(100 * Self.day))  // expire the probe file
        #expect(try probe.storedReports().isEmpty)

        let store = ReportStore(directory: dir, limits: ReportStoreLimits(maxTotalBytes: size * 5 / 2))
        for index in 0..<4 {
            try store.write(Self.report("b\(index)", padding: 1000), now: Self.date(100 * Self.day + TimeInterval(index)))
        }
        let reports = try store.storedReports()
        #expect(try reports.map { try store.read($0.path).id } == ["b2", "b3"])
        #expect(reports.reduce(0) { $0 + $1.bytes } <= size * 5 / 2)
    }

    @Test func expiresAfterTenDaysWithInjectedNow() throws {
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = ReportStore(directory: dir)
        try store.write(Self.report("old"), now: Self.date(0))
        try store.write(Self.report("recent"), now: Self.date(5 * Self.day))
        #expect(try store.prune(now: Self.date(10 * Self.day)).isEmpty)
        let removed = try store.prune(now: Self.date(10 * Self.day + 1))
        #expect(removed.count == 1)
        #expect(try store.storedReports().map { try store.read($0.path).id } == ["recent"])
        // A write also expires.
        try store.write(Self.report("new"), now: Self.date(16 * Self.day))
        #expect(try store.storedReports().map { try store.read($0.path).id } == ["new"])
    }

    @Test func unwritableDirectoryIsATypedErrorAndLeavesNothing() throws {
        let root = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: false)
        let blocker = root + "/plain-file"
        #expect(FileManager.default.createFile(atPath: blocker, contents: Data("x".utf8)))

        let under = ReportStore(directory: blocker + "/reports")
        #expect(throws: ReportStoreError.cannotCreateDirectory(path: blocker + "/reports", errno: ENOTDIR)) {
            try under.write(Self.report("u"), now: Self.date(0))
        }
        #expect(throws: ReportStoreError.notADirectory(path: blocker)) {
            try ReportStore(directory: blocker).write(Self.report("u"), now: Self.date(0))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: root) == ["plain-file"])
        do {
            try under.write(Self.report("u"))
            Issue.record("writing under a regular file must fail")
        } catch {
            #expect(error.description.contains(blocker))
            #expect(error.description.contains("Not a directory"))
        }
    }

    @Test func failedRenameRemovesTheTemporaryFile() throws {
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // Occupy the final name with a non-empty directory so that rename(2) fails.
        let occupied = dir + "/sw-0001700000000000-stall-clash.json"
        try FileManager.default.createDirectory(atPath: occupied + "/inside", withIntermediateDirectories: true)
        #expect {
            try ReportStore(directory: dir).write(Self.report("clash"), now: Self.date(0))
        } throws: { error in
            guard case .cannotRename(_, let to, _)? = error as? ReportStoreError else { return false }
            return to == occupied
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir) == ["sw-0001700000000000-stall-clash.json"])
    }

    @Test func tooLargeReportIsRejectedBeforeWriting() throws {
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = ReportStore(directory: dir, limits: ReportStoreLimits(maxTotalBytes: 100))
        #expect {
            try store.write(Self.report("big"), now: Self.date(0))
        } throws: { error in
            guard case .reportTooLarge(_, 100)? = error as? ReportStoreError else { return false }
            return true
        }
        #expect(!FileManager.default.fileExists(atPath: dir))
    }

    @Test func foreignFilesAreNeverEvicted() throws {
        let dir = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = ReportStore(directory: dir, limits: ReportStoreLimits(maxCount: 1))
        try store.write(Self.report("first"), now: Self.date(0))
        #expect(FileManager.default.createFile(atPath: dir + "/notes.json", contents: Data("{}".utf8)))
        try store.write(Self.report("second"), now: Self.date(1))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted().count == 2)
        #expect(FileManager.default.fileExists(atPath: dir + "/notes.json"))
    }
}

extension ReportStore {
    /// The size of the file at `path`, via the store's own listing.
    fileprivate func storedReports(for path: String) throws -> Int? {
        try storedReports().first { $0.path == path }?.bytes
    }
}
