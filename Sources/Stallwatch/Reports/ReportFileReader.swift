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

/// Reads a report file given by a person (the `stallwatch` commands), refusing what is not one
/// with a one-line reason: a FIFO or a device (never opened for blocking reads), a directory, a
/// file too large to be a report, a newer schema, damaged JSON.
public enum ReportFileReader {
    /// The largest file read: a report of a long, deep stall with every thread is a few MiB;
    /// decoding costs about three times the file in memory.
    public static let defaultMaximumBytes = 32 << 20

    /// The report in the file at `path`.
    public static func read(_ path: String, maximumBytes: Int = defaultMaximumBytes) throws(ReportReadError) -> StallReport {
        try decode(readBytes(path, maximumBytes: maximumBytes), path: path)
    }

    /// The bytes of the regular file at `path`, at most `maximumBytes`.
    public static func readBytes(_ path: String, maximumBytes: Int = defaultMaximumBytes) throws(ReportReadError) -> [UInt8] {
        // O_NONBLOCK: opening a FIFO without a writer must not hang before fstat can refuse it.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw .cannotOpen(path: path, errno: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .cannotRead(path: path, errno: errno) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw .notARegularFile(path: path, kind: Self.kind(info.st_mode))
        }
        guard Int(info.st_size) <= maximumBytes else {
            throw .tooLarge(path: path, bytes: Int(info.st_size), limit: maximumBytes)
        }
        var content: [UInt8] = []
        content.reserveCapacity(Int(info.st_size))
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        // Read to the end rather than trusting the size: a file that grew meanwhile is still capped.
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if count == 0 { return content }
            if count < 0 {
                if errno == EINTR { continue }
                throw .cannotRead(path: path, errno: errno)
            }
            content.append(contentsOf: chunk[0..<count])
            guard content.count <= maximumBytes else { throw .tooLarge(path: path, bytes: content.count, limit: maximumBytes) }
        }
    }

    /// Decodes report JSON, naming the file in any error.
    public static func decode(_ bytes: [UInt8], path: String) throws(ReportReadError) -> StallReport {
        let data = Data(bytes)
        // The version first: a newer file deserves "upgrade", not a list of keys it lacks.
        if let header = try? JSONDecoder().decode(SchemaHeader.self, from: data), let version = header.schemaVersion,
           !(1...StallReport.currentSchemaVersion).contains(version) {
            throw .unsupportedSchema(path: path, version: version)
        }
        do {
            return try JSONDecoder().decode(StallReport.self, from: data)
        } catch let error as DecodingError {
            throw .invalid(path: path, reason: Self.oneLine(error))
        } catch {
            throw .invalid(path: path, reason: "\(error)")
        }
    }

    private struct SchemaHeader: Decodable {
        var schemaVersion: Int?
    }

    private static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: return "a directory"
        case S_IFIFO: return "a FIFO"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "not a regular file"
        }
    }

    /// DecodingError's own description is a multi-line dump of its context.
    private static func oneLine(_ error: DecodingError) -> String {
        func at(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return path.isEmpty ? "" : " at \(path.hasPrefix(".") ? String(path.dropFirst()) : path)"
        }
        let text: String
        switch error {
        case .dataCorrupted(let context):
            let underlying = (context.underlyingError as NSError?).map { " (\($0.localizedDescription))" } ?? ""
            text = "\(context.debugDescription)\(underlying)\(at(context))"
        case .keyNotFound(let key, let context):
            text = "missing key '\(key.stringValue)'\(at(context))"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            text = "\(context.debugDescription)\(at(context))"
        @unknown default:
            text = "\(error)"
        }
        return text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}

/// Why a report file could not be read; each description is one line naming the file.
public enum ReportReadError: Error, Equatable, CustomStringConvertible {
    /// `open` failed.
    case cannotOpen(path: String, errno: Int32)
    /// A directory, FIFO, device or socket.
    case notARegularFile(path: String, kind: String)
    /// Larger than a report can be.
    case tooLarge(path: String, bytes: Int, limit: Int)
    /// `read` failed.
    case cannotRead(path: String, errno: Int32)
    /// A schema this version does not know (written by a newer Stallwatch, or made up).
    case unsupportedSchema(path: String, version: Int)
    /// Not JSON, or not a report.
    case invalid(path: String, reason: String)

    /// One line: the file, then why.
    public var description: String {
        switch self {
        case .cannotOpen(let path, let code), .cannotRead(let path, let code):
            return "cannot read \(path): \(String(cString: strerror(code)))"
        case .notARegularFile(let path, let kind):
            return "\(path) is \(kind), not a report file"
        case .tooLarge(let path, let bytes, let limit):
            return "\(path) is \(bytes) bytes, more than a report can be (limit \(limit) bytes); not read"
        case .unsupportedSchema(let path, let version):
            return "\(path) has report schema \(version); this stallwatch reads schemas 1...\(StallReport.currentSchemaVersion) (a newer Stallwatch wrote it?)"
        case .invalid(let path, let reason):
            return "\(path) is not a Stallwatch report: \(reason)"
        }
    }
}
