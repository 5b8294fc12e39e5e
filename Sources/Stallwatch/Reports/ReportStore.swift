import Foundation
import StallwatchPolicy
import StallwatchReport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Bounds of a report directory *(matrix: 10-day expiry)*.
public struct ReportStoreLimits: Sendable, Equatable {
    /// Keep at most this many reports; the oldest are evicted first.
    public var maxCount: Int
    /// Keep at most this many bytes of reports; the oldest are evicted first.
    public var maxTotalBytes: Int
    /// Reports older than this (by their file's modification time) are deleted.
    public var maxAge: Duration
    /// Accept a directory that other users can write (false): in one, they could plant, swap or
    /// delete report files. Even then the store only ever deletes files it owns.
    public var allowSharedDirectory: Bool

    /// Creates limits; the defaults are 200 reports, 64 MiB, 10 days and an owner-only directory.
    public init(maxCount: Int = 200, maxTotalBytes: Int = 64 << 20, maxAge: Duration = .seconds(10 * 86_400),
                allowSharedDirectory: Bool = false) {
        self.maxCount = maxCount
        self.maxTotalBytes = maxTotalBytes
        self.maxAge = maxAge
        self.allowSharedDirectory = allowSharedDirectory
    }
}

/// A report file in the store.
public struct StoredReport: Sendable, Equatable {
    /// Full path.
    public var path: String
    /// The file's modification time (its last write), Unix epoch milliseconds.
    public var unixMilliseconds: Int64
    /// Size in bytes.
    public var bytes: Int
}

/// Writes reports as JSON files into a bounded, owner-only directory.
///
/// Each write is atomic (a `0600` temporary file in the same directory, synced, then renamed),
/// so readers never see a partial report and a failure leaves nothing behind. After each write
/// the directory is pruned: expired reports first, then the oldest until within the count and
/// byte limits. Not synchronized across threads or processes: give each store one writer.
public struct ReportStore: Sendable {
    /// The report directory.
    public let directory: String
    /// The directory's bounds.
    public let limits: ReportStoreLimits

    /// A store writing into `directory` (created with mode 0700 on first write).
    public init(directory: String, limits: ReportStoreLimits = ReportStoreLimits()) {
        self.directory = directory
        self.limits = limits
    }

    /// Writes `report` and prunes the directory; returns the new file's path.
    ///
    /// - Parameters:
    ///   - report: the report to store.
    ///   - now: the wall-clock time recorded in the file name and used for expiry;
    ///     injectable for tests.
    @discardableResult
    public func write(_ report: StallReport, now: Date = Date()) throws(ReportStoreError) -> String {
        try write(report, replacing: nil, now: now)
    }

    /// Writes `report` in place of the file at `previous` (the path an earlier ``write(_:now:)``
    /// of the same report returned), atomically: readers see the old report or the new one, never
    /// both and never a partial one, and the file keeps its name. When `previous` is `nil`, is not
    /// a report file of this store for the same id, or was evicted meanwhile, a new file is written.
    /// Returns the path written.
    @discardableResult
    public func write(_ report: StallReport, replacing previous: String?, now: Date = Date()) throws(ReportStoreError) -> String {
        let bytes = try Self.encode(report)
        guard bytes.count <= limits.maxTotalBytes else {
            throw .reportTooLarge(bytes: bytes.count, limit: limits.maxTotalBytes)
        }
        try ReportDirectoryIO.ensureDirectory(directory, allowShared: limits.allowSharedDirectory)
        let name = replaceableName(previous, id: report.id, kind: report.kind.rawValue)
            ?? ReportFileName(unixMilliseconds: Self.milliseconds(now), kind: report.kind.rawValue, id: report.id)
        // The pprof companion goes first: a report never points at an export that failed, and
        // an export whose report failed is swept as an orphan.
        if report.configuration.writePprof {
            let profile: [UInt8]
            do {
                profile = try PprofFile.bytes(of: [report])
            } catch {
                throw .encodingFailed(reason: "pprof: \(error)")
            }
            try replaceAtomically(path(name.pprofCompanion), with: profile, modified: now)
        }
        let finalPath = path(name.name)
        try replaceAtomically(finalPath, with: bytes, modified: now)
        ReportDirectoryIO.syncDirectory(directory)
        // The report is safely written; failing to evict must not turn that into an error.
        _ = try? prune(now: now, keeping: name.name)
        return finalPath
    }

    /// Writes a temporary file beside `finalPath` and renames it over `finalPath`.
    private func replaceAtomically(_ finalPath: String, with bytes: [UInt8], modified: Date) throws(ReportStoreError) {
        let name = String(finalPath.split(separator: "/").last ?? "report")
        // Unique per process and per call, so two writers never share a temporary file.
        let temporaryPath = path("\(ReportFileName.temporaryPrefix)\(getpid())-\(UInt32.random(in: .min ... .max))-\(name)")
        try ReportDirectoryIO.writeNewFile(temporaryPath, bytes, modified: modified)
        if rename(temporaryPath, finalPath) != 0 {
            let code = errno
            unlink(temporaryPath)
            throw .cannotRename(from: temporaryPath, to: finalPath, errno: code)
        }
    }

    /// The name of `previous` when it is a report of this store for `id` that still exists.
    private func replaceableName(_ previous: String?, id: String, kind: String) -> ReportFileName? {
        guard let previous, let slash = previous.lastIndex(of: "/"),
              String(previous[..<slash]) == (directory.hasSuffix("/") ? String(directory.dropLast()) : directory),
              let name = ReportFileName(parsing: String(previous[previous.index(after: slash)...])),
              name == ReportFileName(unixMilliseconds: name.unixMilliseconds, kind: kind, id: id),
              ReportDirectoryIO.regularFileSize(previous) != nil else { return nil }
        return name
    }

    /// Deletes expired reports, then the oldest until within the limits; returns removed paths.
    @discardableResult
    public func prune(now: Date = Date()) throws(ReportStoreError) -> [String] {
        try prune(now: now, keeping: nil)
    }

    /// The store's reports, oldest first: regular files named as the store names them and owned by
    /// this user (nothing else is ever touched). An absent directory holds none.
    public func storedReports() throws(ReportStoreError) -> [StoredReport] {
        guard access(directory, F_OK) == 0 else { return [] }
        let owner = geteuid()
        return try ReportDirectoryIO.list(directory).compactMap(ReportFileName.init(parsing:)).compactMap { name in
            ReportDirectoryIO.ownRegularFile(path(name.name), owner: owner).map {
                let companion = ReportDirectoryIO.ownRegularFile(path(name.pprofCompanion), owner: owner)?.bytes ?? 0
                return StoredReport(path: path(name.name), unixMilliseconds: $0.modifiedMilliseconds, bytes: $0.bytes + companion)
            }
        }.sorted { ($0.unixMilliseconds, $0.path) < ($1.unixMilliseconds, $1.path) }
    }

    /// Deletes temporary files this user's writers left behind (a crash between write and rename):
    /// those of processes that no longer run, and any older than an hour. Returns removed paths.
    @discardableResult
    public func sweepTemporaryFiles(now: Date = Date()) -> [String] {
        guard let names = try? ReportDirectoryIO.list(directory) else { return [] }
        let owner = geteuid()
        return names.filter { $0.hasPrefix(ReportFileName.temporaryPrefix) }.compactMap { name in
            let full = path(name)
            guard let file = ReportDirectoryIO.ownRegularFile(full, owner: owner) else { return nil }
            let pid = name.dropFirst(ReportFileName.temporaryPrefix.count).prefix { $0 != "-" }
            let writerGone = Int32(pid).map { kill($0, 0) != 0 && errno == ESRCH } ?? true
            let stale = Self.milliseconds(now) - file.modifiedMilliseconds > 3_600_000
            guard writerGone || stale, unlink(full) == 0 else { return nil }
            return full
        }
    }

    /// Reads and decodes one report file.
    public func read(_ path: String) throws(ReportStoreError) -> StallReport {
        let bytes = try ReportDirectoryIO.readAll(path)
        do {
            return try JSONDecoder().decode(StallReport.self, from: Data(bytes))
        } catch {
            throw .decodingFailed(path: path, reason: "\(error)")
        }
    }

    private func prune(now: Date, keeping protected: String?) throws(ReportStoreError) -> [String] {
        var reports = try storedReports()
        var removed = sweepTemporaryFiles(now: now)
        let oldestAllowed = Self.milliseconds(now) - limits.maxAge.clampedNanoseconds / 1_000_000
        func remove(at index: Int) {
            if unlink(reports[index].path) == 0 || errno == ENOENT { removed.append(reports[index].path) }
            removeCompanion(ofReport: reports[index].path)
            reports.remove(at: index)
        }
        removed += sweepOrphanedCompanions()
        var index = 0
        while index < reports.count {
            if reports[index].unixMilliseconds < oldestAllowed, reports[index].path != protected.map(path) {
                remove(at: index)
            } else {
                index += 1
            }
        }
        while reports.count > limits.maxCount || reports.reduce(0, { $0 + $1.bytes }) > limits.maxTotalBytes {
            guard let victim = reports.firstIndex(where: { $0.path != protected.map(path) }) else { break }
            remove(at: victim)
        }
        return removed
    }

    private func removeCompanion(ofReport reportPath: String) {
        guard let name = reportPath.split(separator: "/").last.flatMap({ ReportFileName(parsing: String($0)) }) else { return }
        let companion = path(name.pprofCompanion)
        if ReportDirectoryIO.ownRegularFile(companion, owner: geteuid()) != nil { unlink(companion) }
    }

    /// pprof exports whose report is gone (its write failed after the export's, or someone removed it).
    private func sweepOrphanedCompanions() -> [String] {
        guard let names = try? ReportDirectoryIO.list(directory) else { return [] }
        let owner = geteuid()
        return names.compactMap { entry in
            guard let report = ReportFileName(parsingCompanion: entry), access(path(report.name), F_OK) != 0,
                  ReportDirectoryIO.ownRegularFile(path(entry), owner: owner) != nil, unlink(path(entry)) == 0 else { return nil }
            return path(entry)
        }
    }

    private func path(_ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// The report as the store writes it (the OTLP exporter sends the same bytes as a profile's payload).
    static func encode(_ report: StallReport) throws(ReportStoreError) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        do {
            return Array(try encoder.encode(report))
        } catch {
            throw .encodingFailed(reason: "\(error)")
        }
    }

    private static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded(.down)
        return Int64(exactly: value) ?? 0
    }
}
