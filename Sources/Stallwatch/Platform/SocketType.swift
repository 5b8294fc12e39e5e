#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Socket types as the `Int32` that `socket` and `socketpair` take: glibc imports them as cases
/// of its `__socket_type` enum, Darwin and musl as plain `Int32` constants.
package enum SocketType {
    /// `SOCK_STREAM`.
    package static var stream: Int32 {
#if canImport(Glibc)
        Int32(SOCK_STREAM.rawValue)
#else
        SOCK_STREAM
#endif
    }
}
