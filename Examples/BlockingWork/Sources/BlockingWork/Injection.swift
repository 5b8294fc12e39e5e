import CBlockingWork
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// Labelled stalls for the fault-injection matrix (Tests/EndToEnd/matrix.py): each kind is one
// function of its own, named in `injectionFunctions`, so the harness can look for it in the
// blamed stack; `runInjection` times the blocking call itself so a report can be matched to it.

/// The function each injection kind must be blamed on, for the harness (`GET /inject/kinds`).
public let injectionFunctions: [String: String] = [
    "cpu": "blockOnCPU", "json": "encodeBigJSON", "pbkdf2": "hashPassword", "sleep": "blockInSleep",
    "semaphore": "waitOnSemaphore", "mutex": "blockOnLock", "socket": "blockOnSocketRead",
    "pipe": "blockOnPipeRead", "fsync": "fsyncStorm", "bigfile": "readBigFile", "bigread": "readFileInOneCall",
    "zlib": "compressWithZlib", "sqlite": "queryRecursiveSQLite", "regex": "matchWithRegex",
    "qsort": "sortWithCComparator", "recursion": "recurseThenCompute", "heldmutex": "blockOnHeldLock",
]

/// Runs `body` and returns the JSON the injection routes answer with: wall (CLOCK_REALTIME) and
/// monotonic start and end in ns, the kernel tid and name of the thread it blocked.
public func timedInjection(kind: String, milliseconds: Int, _ body: () -> Void) -> String {
    let tid = bw_gettid()
    var name = [CChar](repeating: 0, count: 32)
    bw_thread_name(&name, name.count)
    let wallStart = bw_realtime_ns(), monoStart = bw_monotonic_ns()
    body()
    let monoEnd = bw_monotonic_ns(), wallEnd = bw_realtime_ns()
    let threadName = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return "{\"kind\":\"\(kind)\",\"ms\":\(milliseconds),\"tid\":\(tid),\"thread\":\"\(threadName)\","
        + "\"wallStartNs\":\(wallStart),\"wallEndNs\":\(wallEnd),\"monoStartNs\":\(monoStart),\"monoEndNs\":\(monoEnd)}\n"
}

/// Blocks the calling thread with the injection `kind` for about `milliseconds`; nil for an unknown
/// kind. The answer is `timedInjection`'s JSON.
public func runInjection(kind: String, milliseconds: Int) -> String? {
    // Its answer also names the lock's holder, for the harness to find in the report.
    if kind == "heldmutex" { return heldLockInjection(milliseconds: milliseconds) }
    let work: () -> Void
    switch kind {
    case "cpu": work = { blockOnCPU(milliseconds: milliseconds) }
    case "json": work = { encodeBigJSON(milliseconds: milliseconds) }
    case "pbkdf2": work = { hashPassword(milliseconds: milliseconds) }
    case "sleep": work = { blockInSleep(milliseconds: milliseconds) }
    case "semaphore": work = { waitOnSemaphore(milliseconds: milliseconds) }
    case "mutex": work = { blockOnLock(milliseconds: milliseconds) }
    case "socket": work = { blockOnSocketRead(milliseconds: milliseconds) }
    case "pipe": work = { blockOnPipeRead(milliseconds: milliseconds) }
    case "fsync": work = { fsyncStorm(milliseconds: milliseconds) }
    case "bigfile": work = { readBigFile(milliseconds: milliseconds) }
    case "bigread": work = { readFileInOneCall(milliseconds: milliseconds) }
    case "zlib": work = { compressWithZlib(milliseconds: milliseconds) }
    case "sqlite": work = { queryRecursiveSQLite(milliseconds: milliseconds) }
    case "regex": work = { matchWithRegex(milliseconds: milliseconds) }
    case "qsort": work = { sortWithCComparator(milliseconds: milliseconds) }
    case "recursion": work = { recurseThenCompute(depth: 300, milliseconds: milliseconds) }
    default: return nil
    }
    return timedInjection(kind: kind, milliseconds: milliseconds, work)
}

private struct Row: Codable { var id: Int; var name: String; var score: Double; var tags: [String] }

/// JSONEncoder on a big array, again and again until the time is up.
@inline(never)
public func encodeBigJSON(milliseconds: Int) {
    let rows = (0..<2_000).map { Row(id: $0, name: "row \($0)", score: Double($0) / 3, tags: ["a", "b", "\($0)"]) }
    let end = ContinuousClock.now + .milliseconds(milliseconds)
    var bytes = 0
    while ContinuousClock.now < end {
        bytes &+= (try? JSONEncoder().encode(rows))?.count ?? 0
    }
    if bytes == 42 { print("") }
}

@inline(never)
public func hashPassword(milliseconds: Int) { _ = bw_pbkdf2(Int32(clamping: milliseconds)) }

@inline(never)
public func compressWithZlib(milliseconds: Int) { _ = bw_zlib_compress(Int32(clamping: milliseconds)) }

@inline(never)
public func queryRecursiveSQLite(milliseconds: Int) { _ = bw_sqlite_recursive(Int32(clamping: milliseconds)) }

@inline(never)
public func matchWithRegex(milliseconds: Int) { _ = bw_regexec(Int32(clamping: milliseconds)) }

@inline(never)
public func sortWithCComparator(milliseconds: Int) { _ = bw_qsort(Int32(clamping: milliseconds)) }

/// `DispatchSemaphore.wait` (what an async route must never do), signalled after `milliseconds`.
@inline(never)
public func waitOnSemaphore(milliseconds: Int) {
    let semaphore = DispatchSemaphore(value: 0)
    let signaller = Thread {
        usleep(UInt32(clamping: milliseconds * 1000))
        semaphore.signal()
    }
    signaller.start()
    semaphore.wait()
}

/// A blocking `read` on a pipe whose writer stays silent for `milliseconds`.
@inline(never)
public func blockOnPipeRead(milliseconds: Int) {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { return }
    defer { close(fds[0]); close(fds[1]) }
    let writer = fds[1]
    let answer = Thread {
        usleep(UInt32(clamping: milliseconds * 1000))
        _ = write(writer, "x", 1)
    }
    answer.start()
    var byte: UInt8 = 0
    _ = read(fds[0], &byte, 1)
}

/// Small writes, each followed by `fsync`, until the time is up.
@inline(never)
public func fsyncStorm(milliseconds: Int) {
    let path = NSTemporaryDirectory() + "stallwatch-fsync-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { return }
    defer { close(fd); unlink(path) }
    let block = [UInt8](repeating: 7, count: 4096)
    let end = ContinuousClock.now + .milliseconds(milliseconds)
    while ContinuousClock.now < end {
        _ = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        _ = fsync(fd)
    }
}

/// Reads a 32 MiB file front to back, dropping it from the page cache after each pass so the reads
/// go to the disk, until the time is up.
@inline(never)
public func readBigFile(milliseconds: Int) {
    let path = NSTemporaryDirectory() + "stallwatch-bigfile-\(getpid())"
    if access(path, R_OK) != 0 {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { return }
        let chunk = [UInt8](repeating: 1, count: 1 << 20)
        for _ in 0..<32 { _ = chunk.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
        fsync(fd)
        close(fd)
    }
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    let end = ContinuousClock.now + .milliseconds(milliseconds)
    while ContinuousClock.now < end {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 {
            _ = posix_fadvise(fd, 0, 0, Int32(POSIX_FADV_DONTNEED))
            _ = lseek(fd, 0, SEEK_SET)
        }
    }
}

/// One `read` of a large file, as `Data(contentsOf:)` of a big file does: the kernel copies it in a
/// single call that a sampling signal cannot interrupt (it is delivered when the call returns), so
/// the thread shows no user stack for the whole stall. The file is sparse (no disk used; its holes
/// read as zeros through the page cache), sized at about 1 MB per millisecond: a copy from the
/// cache runs at about 1 GB/s on the CI machine, a first read that fills the cache 4× slower, so the
/// call's length is only near `milliseconds` (the harness judges it by the time it measured).
@inline(never)
public func readFileInOneCall(milliseconds: Int) {
    let size = 2 << 30
    let path = NSTemporaryDirectory() + "stallwatch-bigread-\(getuid())"
    let fd = open(path, O_RDWR | O_CREAT, 0o600)
    guard fd >= 0 else { return }
    defer { close(fd) }
    var st = stat()
    if fstat(fd, &st) == 0, st.st_size != size { _ = ftruncate(fd, off_t(size)) }
    let bytes = min(max(milliseconds, 1) << 20, size)
    guard let buffer = malloc(bytes) else { return }
    defer { free(buffer) }
    _ = pread(fd, buffer, bytes, 0)
}

/// Recurses `depth` frames deep, then computes: a deep stack whose every frame must be kept.
@inline(never)
public func recurseThenCompute(depth: Int, milliseconds: Int) {
    if depth <= 0 {
        blockOnCPU(milliseconds: milliseconds)
        return
    }
    recurseThenCompute(depth: depth - 1, milliseconds: milliseconds)
    if depth == Int.min { print("") }   // not a tail call: each level keeps its frame
}
