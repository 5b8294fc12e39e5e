#if canImport(Glibc)
import Glibc
#endif
@testable import Stallwatch
import StallwatchPolicy
import Testing

/// The machine-wide facts a runnable thread's CPU is weighed against: the runnable tasks from
/// /proc/loadavg and the cgroup's CPU-quota throttling.
@Suite struct CauseFactsTests {
    @Test func loadavgRunningField() {
        #expect(MachineRunnable.parse(ArraySlice("0.52 0.58 0.59 3/1234 5678\n".utf8)) == 3)
        #expect(MachineRunnable.parse(ArraySlice("12.00 9.10 4.00 17/20000 99\n".utf8)) == 17)
        #expect(MachineRunnable.parse(ArraySlice("0.52 0.58 0.59\n".utf8)) == nil)
        #expect(MachineRunnable.parse(ArraySlice("0.52 0.58 0.59 x/1234 5678\n".utf8)) == nil)
        #expect(MachineRunnable.parse(ArraySlice("0.52 0.58 0.59 /1234 5678\n".utf8)) == nil)
    }

    /// Read here, the count leaves the reader out and says where it came from.
    @Test func loadavgIsReadOnLinux() throws {
        #if os(Linux)
        let count = try MachineRunnable.read().get()
        #expect(count.count >= 0)
        #expect(count.source.hasPrefix("/proc/loadavg"))
        #endif
    }

    @Test func cpuStatThrottledTime() {
        let text = """
        usage_usec 123456
        user_usec 100000
        system_usec 23456
        nr_periods 50
        nr_throttled 7
        throttled_usec 350000
        nr_bursts 0
        burst_usec 0

        """
        #expect(CgroupThrottling.parse(ArraySlice(text.utf8)) == .milliseconds(350))
        // The root cgroup, or one without the cpu controller: no throttling line.
        #expect(CgroupThrottling.parse(ArraySlice("usage_usec 1\nuser_usec 1\nsystem_usec 0\n".utf8)) == nil)
    }

    @Test func taskIOStorageBytes() {
        let text = """
        rchar: 2012
        wchar: 10948608
        syscr: 3
        syscw: 2668
        read_bytes: 4096
        write_bytes: 10948608
        cancelled_write_bytes: 0

        """
        #expect(ThreadStorageIO.parse(ArraySlice(text.utf8)) == 10_952_704)
        #expect(ThreadStorageIO.parse(ArraySlice("rchar: 1\nwchar: 1\n".utf8)) == nil)
        // Only a line that starts with the key counts: `cancelled_write_bytes` is not `write_bytes`.
        #expect(ThreadStorageIO.parse(ArraySlice("read_bytes: 7\ncancelled_write_bytes: 9\n".utf8)) == nil)
        #expect(ThreadStorageIO.parse(ArraySlice("cancelled_write_bytes: 9\nread_bytes: 7\nwrite_bytes: 2".utf8)) == 9)
    }

    @Test("a /proc field is read without allocating: digits to the line's end, or nothing")
    func procFieldText() {
        #expect(ProcFieldText.unsigned(after: "a: ", in: Array("b: 1\na: 42\n".utf8)) == 42)
        #expect(ProcFieldText.unsigned(after: "a: ", in: Array("ba: 1\n".utf8)) == nil, "not at a line's start")
        #expect(ProcFieldText.unsigned(after: "a: ", in: Array("a: 4x\n".utf8)) == nil, "not a number")
        #expect(ProcFieldText.unsigned(after: "a: ", in: Array("a: \n".utf8)) == nil, "no digits")
        #expect(ProcFieldText.unsigned(after: "a: ", in: Array("a: 18446744073709551615".utf8)) == UInt64.max)
        #expect(ProcFieldText.unsigned(after: "a: ", in: Array("a: 18446744073709551616".utf8)) == nil, "does not fit")
        #expect(ProcFieldText.unsigned(after: "a: ", in: Array("a".utf8)) == nil, "the key cut short")
    }

    /// A thread that does not exist: the reason names the file and the error.
    @Test func taskIOOfAGoneThreadSaysWhy() {
        guard case .failure(let unread) = ThreadStorageIO.read(ThreadID(rawValue: Int32.max)) else {
            Issue.record("read the io file of a thread that cannot exist")
            return
        }
        #expect(unread.reason.hasPrefix("opening /proc/self/task/\(Int32.max)/io: No such"), "\(unread.reason)")
    }

    /// A thread's own writes and syncs show in its file as soon as they are made.
    @Test func taskIOCountsThisThreadsWrites() throws {
        #if os(Linux)
        let path = "/tmp/stallwatch-io-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        defer { close(fd); unlink(path) }
        let before = try #require(ThreadStorageIO.bytes(.current))
        let block = [UInt8](repeating: 7, count: 65536)
        _ = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        _ = fsync(fd)
        let after = try #require(ThreadStorageIO.bytes(.current))
        #expect(after >= before + 65536, "\(after - before) bytes")
        #endif
    }
}
