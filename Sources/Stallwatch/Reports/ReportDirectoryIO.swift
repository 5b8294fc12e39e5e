import struct Foundation.Date

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few POSIX operations the report store needs, with `errno` kept for typed errors.
/// Plain system calls rather than FileManager so that modes, `O_EXCL` and `fsync` are explicit.
enum ReportDirectoryIO {
    /// Creates `path` and missing parents with mode 0700; an existing directory is accepted unless
    /// other users can write it (and `allowShared` is false).
    static func ensureDirectory(_ path: String, allowShared: Bool = false) throws(ReportStoreError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                throw .cannotCreateDirectory(path: prefix, errno: errno)
            }
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw .cannotCreateDirectory(path: path, errno: errno) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw .notADirectory(path: path) }
        if !allowShared, (info.st_mode & 0o022) != 0 {
            throw .directoryWritableByOthers(path: path, mode: UInt32(info.st_mode))
        }
    }

    /// Size and modification time of a regular file owned by `owner`, or `nil` (not a regular
    /// file, someone else's, or vanished). `lstat`: a symlink is never followed.
    static func ownRegularFile(_ path: String, owner: uid_t) -> (bytes: Int, modifiedMilliseconds: Int64)? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == owner else { return nil }
        return (Int(info.st_size), info.modificationMilliseconds)
    }

    /// Writes `bytes` to a new file at `path` (mode 0600, must not exist) and syncs it. On any
    /// failure the partial file is removed before throwing.
    /// Its modification time is set to `modified`: retention is by file time, and tests inject time.
    static func writeNewFile(_ path: String, _ bytes: [UInt8], modified: Date) throws(ReportStoreError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .cannotWrite(path: path, errno: errno) }
        var failure: Int32?
        // The umask could only narrow 0600, but be explicit: reports may contain symbol names
        // and thread names that are nobody else's business.
        if fchmod(fd, 0o600) != 0 { failure = errno }
        var written = 0
        while failure == nil, written < bytes.count {
            let result = bytes.withUnsafeBytes { buffer in
                write(fd, buffer.baseAddress.map { $0 + written }, buffer.count - written)
            }
            if result > 0 {
                written += result
            } else if result < 0, errno == EINTR {
                continue
            } else {
                failure = result < 0 ? errno : EIO
            }
        }
        if failure == nil {
            let seconds = modified.timeIntervalSince1970
            let at = timespec(tv_sec: Int(seconds.rounded(.down)), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
            var times = [at, at]
            if futimens(fd, &times) != 0 { failure = errno }
        }
        if failure == nil, fsync(fd) != 0 { failure = errno }
        if close(fd) != 0, failure == nil { failure = errno }
        if let failure {
            unlink(path)
            throw .cannotWrite(path: path, errno: failure)
        }
    }

    /// Names of entries in `path` (without `.` and `..`).
    static func list(_ path: String) throws(ReportStoreError) -> [String] {
        guard let dir = opendir(path) else { throw .cannotList(path: path, errno: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// Size of a regular file, or `nil` if it is not one (or vanished).
    static func regularFileSize(_ path: String) -> Int? {
        var info = stat()
        guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(info.st_size)
    }

    /// The whole content of a file.
    static func readAll(_ path: String) throws(ReportStoreError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .cannotRead(path: path, errno: errno) }
        defer { close(fd) }
        var content: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count == 0 { return content }
            if count < 0 {
                if errno == EINTR { continue }
                throw .cannotRead(path: path, errno: errno)
            }
            content.append(contentsOf: chunk[0..<count])
        }
    }

    /// Makes a rename durable; best effort, since the data is already safe in the file.
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}
