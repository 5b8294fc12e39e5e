#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The real-time signals (SIGRTMIN...SIGRTMAX) as this process's C library leaves them to the
/// program: glibc reserves the first few for its own threads and says where they start at run
/// time. Darwin has none.
enum RealtimeSignals {
    /// The range, or `nil` where the C library has no real-time signals.
    static var range: ClosedRange<Int32>? {
#if canImport(Glibc)
        __libc_current_sigrtmin()...__libc_current_sigrtmax()
#else
        nil
#endif
    }
}
