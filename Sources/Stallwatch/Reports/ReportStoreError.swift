#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the report store could not do its job. Each case names the path involved and, for
/// system-call failures, the `errno`, so the caller can turn it into an error event that an
/// operator can act on (full disk, wrong permissions, a file where a directory should be).
public enum ReportStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The report directory (or a parent) could not be created.
    case cannotCreateDirectory(path: String, errno: Int32)
    /// The path exists but is not a directory.
    case notADirectory(path: String)
    /// Creating, writing or syncing the temporary file failed (e.g. `ENOSPC`); it was removed.
    case cannotWrite(path: String, errno: Int32)
    /// Renaming the finished temporary file into place failed; it was removed.
    case cannotRename(from: String, to: String, errno: Int32)
    /// The directory could not be listed.
    case cannotList(path: String, errno: Int32)
    /// A report file could not be read.
    case cannotRead(path: String, errno: Int32)
    /// The report could not be encoded as JSON.
    case encodingFailed(reason: String)
    /// A file is not a valid report.
    case decodingFailed(path: String, reason: String)
    /// The encoded report alone exceeds the directory's byte limit.
    case reportTooLarge(bytes: Int, limit: Int)
    /// The directory can be written by other users (group or world), so they could plant or
    /// swap report files; refused unless ``ReportStoreLimits/allowSharedDirectory``.
    case directoryWritableByOthers(path: String, mode: UInt32)

    /// Whether the failure was the disk or quota being full.
    public var isOutOfSpace: Bool {
        switch self {
        case .cannotWrite(_, let code), .cannotRename(_, _, let code):
            return code == ENOSPC || code == EDQUOT
        default:
            return false
        }
    }

    /// A one-line message naming what failed, where, and the system's reason.
    public var description: String {
        switch self {
        case .cannotCreateDirectory(let path, let code):
            return "cannot create report directory \(path): \(Self.reason(code))"
        case .notADirectory(let path):
            return "report directory \(path) exists but is not a directory"
        case .cannotWrite(let path, let code):
            return "cannot write report file \(path): \(Self.reason(code))"
        case .cannotRename(let from, let to, let code):
            return "cannot rename \(from) to \(to): \(Self.reason(code))"
        case .cannotList(let path, let code):
            return "cannot list report directory \(path): \(Self.reason(code))"
        case .cannotRead(let path, let code):
            return "cannot read report \(path): \(Self.reason(code))"
        case .encodingFailed(let reason):
            return "cannot encode report: \(reason)"
        case .decodingFailed(let path, let reason):
            return "\(path) is not a valid report: \(reason)"
        case .directoryWritableByOthers(let path, let mode):
            return "report directory \(path) is writable by other users (mode \(String(mode & 0o7777, radix: 8))): use a directory only this user can write (chmod go-w), or set allowSharedDirectory"
        case .reportTooLarge(let bytes, let limit):
            return "report of \(bytes) bytes exceeds the directory limit of \(limit) bytes"
        }
    }

    private static func reason(_ code: Int32) -> String {
        "\(String(cString: strerror(code))) (errno \(code))"
    }
}
