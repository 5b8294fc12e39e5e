import CSampler
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The bytes a thread made the kernel move to or from storage (`read_bytes` plus `write_bytes` of
/// `/proc/self/task/TID/io`): reads that missed the page cache and pages it dirtied. A thread that
/// copies from the page cache moves none, however much it reads; one that writes and syncs a file in
/// a loop moves every page it writes. What tells storage waits from CPU work or a busy box when the
/// thread was runnable at every look.
enum ThreadStorageIO {
    /// The thread's total so far; `nil` when the file cannot be read (the thread is gone, a kernel
    /// without task I/O accounting).
    static func bytes(_ thread: ThreadID) -> UInt64? {
        try? read(thread).get()
    }

    /// The same, or why it could not be read, in words for the evidence.
    static func read(_ thread: ThreadID) -> Result<UInt64, ThreadStorageIOUnread> {
        let path = "/proc/self/task/\(thread.rawValue)/io"
        let fd = sw_task_file_open(thread.rawValue, "io")
        guard fd >= 0 else { return .failure(ThreadStorageIOUnread("opening \(path): \(String(cString: strerror(-fd)))")) }
        defer { close(fd) }
        // About 200 bytes: rchar, wchar, syscr, syscw, read_bytes, write_bytes, cancelled_write_bytes.
        var buffer = [UInt8](repeating: 0, count: 512)
        let n = buffer.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
        guard n > 0 else {
            return .failure(ThreadStorageIOUnread("reading \(path): \(n < 0 ? String(cString: strerror(errno)) : "empty")"))
        }
        guard let total = parse(buffer[..<n]) else {
            return .failure(ThreadStorageIOUnread("\(path) has no read_bytes and write_bytes lines"))
        }
        return .success(total)
    }

    /// `read_bytes + write_bytes` in the file's text; `nil` when either line is missing.
    static func parse(_ text: ArraySlice<UInt8>) -> UInt64? {
        var read: UInt64?, written: UInt64?
        for line in text.split(separator: UInt8(ascii: "\n")) {
            if line.starts(with: "read_bytes: ".utf8) {
                read = UInt64(String(decoding: line.dropFirst(12), as: UTF8.self))
            } else if line.starts(with: "write_bytes: ".utf8) {
                written = UInt64(String(decoding: line.dropFirst(13), as: UTF8.self))
            }
        }
        guard let read, let written else { return nil }
        return read &+ written
    }
}

/// Why a thread's storage bytes could not be read.
struct ThreadStorageIOUnread: Error, Equatable {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}
