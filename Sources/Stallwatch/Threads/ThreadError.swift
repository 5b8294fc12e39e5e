#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a thread fact could not be read.
package enum ThreadError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The thread exited (or was never a thread of this process).
    case threadGone(ThreadID)
    /// The kernel refused access; the associated text names what was being read.
    case permissionDenied(String)
    /// Any other failure of a system call, with the operation that failed and its errno.
    case system(operation: String, errno: Int32)

    /// A sentence that says what happened.
    package var description: String {
        switch self {
        case .threadGone(let tid):
            return "thread \(tid) is gone (it exited, or is not a thread of this process)"
        case .permissionDenied(let what):
            return "permission denied: \(what)"
        case .system(let operation, let code):
            return "\(operation) failed: \(Self.message(for: code)) (errno \(code))"
        }
    }

    /// Maps a `-errno` result of a CSampler call to an error.
    /// - Parameters:
    ///   - code: the negative return value.
    ///   - operation: what was attempted, for the message.
    ///   - thread: the thread the call was about, so that `-ESRCH` becomes ``threadGone(_:)``.
    init(code: Int32, operation: @autoclosure () -> String, thread: ThreadID? = nil) {
        let errnoValue = code < 0 ? -code : code
        if errnoValue == ESRCH, let thread {
            self = .threadGone(thread)
        } else if errnoValue == EACCES || errnoValue == EPERM {
            self = .permissionDenied(operation())
        } else {
            self = .system(operation: operation(), errno: errnoValue)
        }
    }

    private static func message(for code: Int32) -> String {
        // glibc's strerror returns static text for every known code, so sharing it across threads is safe.
        guard let text = strerror(code) else { return "unknown error" }
        return String(cString: text)
    }
}
