import CSampler
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a stack could not be captured. Every case says what happened; none is a crash.
public enum SamplerError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The thread does not exist (it exited, or the id was never a thread of this process).
    case threadGone(ThreadID)
    /// The thread blocks the sampling signal, so it can never answer. libdispatch worker threads
    /// block SIGUSR1/2 and the real-time signals; SIGPROF reaches them.
    case signalBlocked(ThreadID, signal: Int32)
    /// The thread did not answer before the deadline.
    case timedOut(ThreadID, after: Duration)
    /// Another handler owns the signal and the configuration forbids chaining to it.
    case signalInUse(signal: Int32)
    /// Another sampler in this process already uses a different signal.
    case anotherSignalInstalled(installed: Int32, requested: Int32)
    /// Too many requests are outstanding (answers to abandoned requests are still pending).
    case busy
    /// A thread cannot interrupt itself with the sampling signal.
    case cannotSampleCallingThread
    /// The thread is not blocked in a system call (for a capture of a blocked thread).
    case notBlocked(ThreadID)
    /// A configuration or argument value makes no sense.
    case invalidArgument(String)
    /// The kernel denied access (e.g. /proc restrictions).
    case permissionDenied(String)
    /// Another system error.
    case system(operation: String, errno: Int32)

    public var description: String {
        switch self {
        case .threadGone(let t): return "thread \(t.rawValue) is gone (it exited or never existed)"
        case .signalBlocked(let t, let s):
            return "thread \(t.rawValue) blocks signal \(s) (\(signalName(s))); it cannot be sampled with it"
        case .timedOut(let t, let d): return "thread \(t.rawValue) did not answer within \(d)"
        case .signalInUse(let s):
            return "signal \(s) (\(signalName(s))) already has a handler and chaining to it is disabled"
        case .anotherSignalInstalled(let i, let r):
            return "the sampler already uses signal \(i) (\(signalName(i))); cannot also use \(r) (\(signalName(r)))"
        case .busy: return "too many capture requests are outstanding"
        case .cannotSampleCallingThread: return "a thread cannot sample itself by signal"
        case .notBlocked(let t): return "thread \(t.rawValue) is not blocked in a system call"
        case .invalidArgument(let m): return "invalid argument: \(m)"
        case .permissionDenied(let m): return "permission denied: \(m)"
        case .system(let op, let e): return "\(op) failed: \(String(cString: strerror(e))) (errno \(e))"
        }
    }

    static func from(code: Int32, thread: ThreadID, signal: Int32, timeout: Duration, operation: String) -> SamplerError {
        switch Int(code) {
        case SW_ERR_THREAD_GONE: return .threadGone(thread)
        case SW_ERR_SIGNAL_BLOCKED: return .signalBlocked(thread, signal: signal)
        case SW_ERR_TIMED_OUT: return .timedOut(thread, after: timeout)
        case SW_ERR_SIGNAL_IN_USE: return .signalInUse(signal: signal)
        case SW_ERR_BUSY: return .busy
        case SW_ERR_SELF: return .cannotSampleCallingThread
        case SW_ERR_NOT_BLOCKED: return .notBlocked(thread)
        case SW_ERR_INVALID: return .invalidArgument("\(operation) rejected its arguments")
        case SW_ERR_NOT_INSTALLED: return .system(operation: operation + " (sampler not installed)", errno: EINVAL)
        case Int(-EPERM), Int(-EACCES): return .permissionDenied(operation)
        case Int(-ESRCH): return .threadGone(thread)
        default: return .system(operation: operation, errno: -code)
        }
    }
}

/// A short name for a signal number, for messages.
func signalName(_ signal: Int32) -> String {
    switch signal {
    case SIGPROF: return "SIGPROF"
    case SIGUSR1: return "SIGUSR1"
    case SIGUSR2: return "SIGUSR2"
    case SIGURG: return "SIGURG"
    case SIGVTALRM: return "SIGVTALRM"
    default:
        if let realtime = RealtimeSignals.range, realtime.contains(signal) {
            return "SIGRTMIN+\(signal - realtime.lowerBound)"
        }
        return "signal \(signal)"
    }
}
