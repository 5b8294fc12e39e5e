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

    /// The same, or why it could not be read, in words for the evidence. Read every round of a
    /// stall: nothing is allocated unless it fails (a path, an array and a split per read were
    /// 90 of the watchdog's mallocs in one sampled 1.5 s stall, `bench allocations`).
    static func read(_ thread: ThreadID) -> Result<UInt64, ThreadStorageIOUnread> {
        let fd = sw_task_file_open(thread.rawValue, "io")
        guard fd >= 0 else { return .failure(ThreadStorageIOUnread("opening \(path(thread)): \(String(cString: strerror(-fd)))")) }
        defer { close(fd) }
        // About 200 bytes: rchar, wchar, syscr, syscw, read_bytes, write_bytes, cancelled_write_bytes.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 512) { buffer in
            let n = systemRead(fd, buffer.baseAddress, buffer.count)
            guard n > 0 else {
                return .failure(ThreadStorageIOUnread("reading \(path(thread)): \(n < 0 ? String(cString: strerror(errno)) : "empty")"))
            }
            guard let total = parse(UnsafeBufferPointer(rebasing: buffer[..<n])) else {
                return .failure(ThreadStorageIOUnread("\(path(thread)) has no read_bytes and write_bytes lines"))
            }
            return .success(total)
        }
    }

    private static func path(_ thread: ThreadID) -> String { "/proc/self/task/\(thread.rawValue)/io" }

    /// `read_bytes + write_bytes` in the file's text; `nil` when either line is missing.
    static func parse<Text: Collection<UInt8>>(_ text: Text) -> UInt64? {
        let read = ProcFieldText.unsigned(after: "read_bytes: ", in: text)
        let written = ProcFieldText.unsigned(after: "write_bytes: ", in: text)
        guard let read, let written else { return nil }
        return read &+ written
    }
}

/// Why a thread's storage bytes could not be read.
struct ThreadStorageIOUnread: Error, Equatable {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}
