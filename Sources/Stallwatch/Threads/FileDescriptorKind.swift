import CSampler

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What a file descriptor of this process refers to, from the `/proc/self/fd/<fd>` link.
/// Used to say what a thread blocked in `read`/`epoll_wait`/`recvmsg` is waiting on.
package enum FileDescriptorKind: Hashable, Sendable, Codable {
    /// A socket, with its inode (matches the `inode` column of `/proc/net/tcp`, `ss -e`).
    case socket(inode: UInt64)
    /// One end of a pipe or FIFO created with `pipe()`.
    case pipe
    /// A path in the file system (regular file, device, named FIFO ...).
    case file(path: String)
    /// An `eventfd`.
    case eventfd
    /// An `epoll` instance.
    case epoll
    /// A `timerfd`.
    case timerfd
    /// Anything else, with the kernel's link text (`anon_inode:[signalfd]`, `anon_inode:[io_uring]`, ...).
    case other(String)
    /// The descriptor is not open.
    case closed

    /// Interprets the target of a `/proc/self/fd/<fd>` link.
    package init(linkTarget: String) {
        if linkTarget.hasPrefix("/") {
            self = .file(path: linkTarget)
        } else if linkTarget.hasPrefix("socket:["), linkTarget.hasSuffix("]"),
            let inode = UInt64(linkTarget.dropFirst("socket:[".count).dropLast())
        {
            self = .socket(inode: inode)
        } else if linkTarget.hasPrefix("pipe:[") {
            self = .pipe
        } else {
            switch linkTarget {
            case "anon_inode:[eventfd]": self = .eventfd
            case "anon_inode:[eventpoll]": self = .epoll
            case "anon_inode:[timerfd]": self = .timerfd
            default: self = .other(linkTarget)
            }
        }
    }

    /// Describes descriptor `fd` of this process. A descriptor that is not open is ``closed``.
    /// - Throws: ``ThreadError`` when `/proc/self/fd` cannot be read.
    package static func describe(fd: Int32) throws(ThreadError) -> FileDescriptorKind {
        // PATH_MAX: a longer link is truncated by the kernel's readlink anyway.
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = buffer.withUnsafeMutableBufferPointer { sw_fd_describe(fd, $0.baseAddress, $0.count) }
        if length == -EBADF { return .closed }
        if length < 0 { throw ThreadError(code: length, operation: "reading /proc/self/fd/\(fd)") }
        let bytes = buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }
        return FileDescriptorKind(linkTarget: String(decoding: bytes, as: UTF8.self))
    }
}
