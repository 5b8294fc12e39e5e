import CSampler
import CSamplerTestSupport
import Dispatch
import Foundation
@testable import Stallwatch
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// MARK: - Helpers shared by the thread, clock and NUMA tests

struct TestFailure: Error, CustomStringConvertible {
    let description: String
}

/// A real pthread (not a pool thread) that reports its kernel tid before running `body`,
/// so tests can point the /proc readers at a thread whose behaviour they control.
final class JoinableThread: Sendable {
    let tid: ThreadID
    private let handle: pthread_t

    private final class Start: Sendable {
        let name: String?
        let body: @Sendable () -> Void
        let started = DispatchSemaphore(value: 0)
        let tid = Atomic<Int32>(0)

        init(name: String?, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }

        func run() {
            if let name { _ = sw_thread_set_name(name) }
            tid.store(ThreadID.current.rawValue, ordering: .releasing)
            started.signal()
            body()
        }
    }

    init(name: String? = nil, _ body: @escaping @Sendable () -> Void) throws {
        let start = Start(name: name, body: body)
        let context = Unmanaged.passRetained(start).toOpaque()
        var handle = pthread_t()
        let rc = pthread_create(
            &handle, nil,
            { raw in
                guard let raw else { return nil }
                Unmanaged<Start>.fromOpaque(raw).takeRetainedValue().run()
                return nil
            }, context)
        guard rc == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            throw TestFailure(description: "pthread_create failed: \(rc)")
        }
        self.handle = handle
        guard start.started.wait(timeout: .now() + 5) == .success else {
            throw TestFailure(description: "test thread did not start within 5 s")
        }
        tid = ThreadID(rawValue: start.tid.load(ordering: .acquiring))
    }

    func join() {
        pthread_join(handle, nil)
    }
}

/// A flag one thread raises and another polls.
final class Flag: Sendable {
    private let raised = Atomic<Bool>(false)
    func raise() { raised.store(true, ordering: .releasing) }
    var isRaised: Bool { raised.load(ordering: .acquiring) }
}

/// Polls `condition` every millisecond until it holds or `timeout` passes; the bound keeps a
/// broken reader from hanging the suite while still tolerating a slow scheduler.
func pollUntil(timeout: Duration = .seconds(2), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(1_000)
    }
    return condition()
}

// MARK: - Tests

@Suite("Thread facts from /proc")
struct ThreadFactsTests {
    @Test("listing into a reused array gives the same threads, and keeps its storage when the count fits")
    func listingIntoReusedStorage() throws {
        var list: [ThreadID] = []
        try ThreadList.current(into: &list)
        #expect(list.contains(ThreadID.current))
        #expect(Set(list) == Set(try ThreadList.current()))
        // 70 more threads than a first listing's 64 slots: the listing grows instead of cutting them off.
        let extra = (0..<70).map { i in TestThread(name: "sw-list-\(i)") { t in while !t.shouldStop { usleep(1000) } } }
        defer { extra.forEach { $0.stopAndJoin() } }
        let extraIDs = extra.compactMap(\.tid)
        #expect(extraIDs.count == 70)
        var small: [ThreadID] = []
        try ThreadList.current(into: &small)
        #expect(Set(extraIDs).isSubset(of: Set(small)))
        let capacity = small.capacity
        try ThreadList.current(into: &small)
        #expect(small.capacity == capacity, "the storage was replaced although the threads fit")
        #expect(Set(extraIDs).isSubset(of: Set(small)))
    }

    @Test("files kept open are read anew each time: a blocked read, a spin's growing run time, ESRCH once the thread is gone")
    func taskFilesKeptOpen() throws {
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let readFD = fds[0]
        let worker = TestThread(name: "sw-task-files") { t in
            var byte: UInt8 = 0
            _ = read(readFD, &byte, 1)                          // blocked first
            // Then spinning until it has had 30 ms of CPU: a 60 ms wall-clock spin got under the
            // 20 ms checked below in an ASan pass with builds beside it.
            var cpu = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu)
            let end = Int64(cpu.tv_sec) * 1_000_000_000 + Int64(cpu.tv_nsec) + 30_000_000
            while !t.shouldStop {
                clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu)
                if Int64(cpu.tv_sec) * 1_000_000_000 + Int64(cpu.tv_nsec) >= end { break }
            }
        }
        let tid = try #require(worker.tid)
        let files = TaskFiles(tid)
        var call = sw_thread_syscall_t()
        #expect(eventually { files.syscall(&call) == 0 && call.nr == 0 /* read on x86-64 */ || call.nr == 63 /* read on aarch64 */ }, "last read: nr \(call.nr)")
        var run0: UInt64 = 0, wait0: UInt64 = 0, slices0: UInt64 = 0
        #expect(files.schedstat(run: &run0, wait: &wait0, timeslices: &slices0) == 0)
        var byte: UInt8 = 1
        _ = write(fds[1], &byte, 1)
        var run1: UInt64 = 0, wait1: UInt64 = 0, slices1: UInt64 = 0
        #expect(eventually(timeout: .seconds(10)) { files.schedstat(run: &run1, wait: &wait1, timeslices: &slices1) == 0 && run1 >= run0 + 20_000_000 },
                "run time \(run0) → \(run1): the kept descriptor gave a stale file")
        worker.stopAndJoin()
        #expect(files.syscall(&call) == -ESRCH)
        #expect(files.schedstat(run: &run1, wait: &wait1, timeslices: &slices1) == -ESRCH)
    }

    @Test("a task directory kept open lists the same threads as a fresh one, each time anew")
    func taskDirectoryKeptOpen() throws {
        let directory = sw_task_dir_open()
        try #require(directory >= 0)
        defer { close(directory) }
        var kept: [ThreadID] = []
        try ThreadList.current(into: &kept, directory: directory)
        #expect(kept.contains(ThreadID.current))
        let extra = TestThread(name: "sw-dir-kept") { t in while !t.shouldStop { usleep(1000) } }
        let extraID = try #require(extra.tid)
        try ThreadList.current(into: &kept, directory: directory)
        #expect(kept.contains(extraID))
        extra.stopAndJoin()
        try ThreadList.current(into: &kept, directory: directory)
        #expect(!kept.contains(extraID))
    }

    @Test func currentThreadIDIsTheKernelTid() throws {
        let tid = ThreadID.current
        #expect(tid.rawValue == sw_gettid())
        #expect(tid.rawValue > 0)
        let info = try ThreadInfo.read(tid)
        #expect(info.tid == tid)
        // Reading its own stat, the thread is by definition on a CPU.
        #expect(info.state == .running)
        #expect(try ThreadList.current().contains(tid))
    }

    @Test func namedThreadIsListedWithItsName() throws {
        let release = DispatchSemaphore(value: 0)
        let thread = try JoinableThread(name: "sw-named-test") { release.wait() }
        defer {
            release.signal()
            thread.join()
        }
        let tids = try ThreadList.current()
        #expect(tids.contains(thread.tid))
        #expect(tids.count == Set(tids).count)
        #expect(try ThreadList.count() >= 2)
        let info = try ThreadInfo.read(thread.tid)
        #expect(info.name == "sw-named-test")
        #expect(info.tid == thread.tid)
    }

    @Test func nameWithParenthesesAndSpacesParses() throws {
        // comm may contain ") " — the stat parser must split at the last ')'.
        let release = DispatchSemaphore(value: 0)
        let thread = try JoinableThread(name: "a) b (c) 1 2") { release.wait() }
        defer {
            release.signal()
            thread.join()
        }
        var info = try ThreadInfo.read(thread.tid)
        #expect(info.name == "a) b (c) 1 2")
        // A semaphore wait sleeps in futex; wait until the thread has got there.
        let settled = eventually {
            guard let fresh = try? ThreadInfo.read(thread.tid) else { return false }
            info = fresh
            return fresh.state == .sleeping && fresh.syscall.blockedSyscall != nil
        }
        #expect(settled, "thread never showed as sleeping in a syscall: \(info)")
        let cpus = Int(sysconf(Int32(_SC_NPROCESSORS_CONF)))
        #expect((0..<cpus).contains(info.lastCPU))
        #expect(info.syscall.blockedSyscall?.name == "futex")
        #if arch(x86_64)
        #expect(info.syscall.blockedSyscall?.number == 202)
        #elseif arch(arm64)
        #expect(info.syscall.blockedSyscall?.number == 98)
        #endif
    }

    @Test func threadBlockedInReadShowsTheSyscallAndItsPipe() throws {
        var fds: [Int32] = [-1, -1]
        try #require(pipe(&fds) == 0)
        let readFD = fds[0]
        let writeFD = fds[1]
        defer {
            close(readFD)
            close(writeFD)
        }
        let thread = try JoinableThread(name: "sw-pipe-reader") {
            var byte: UInt8 = 0
            _ = read(readFD, &byte, 1)
        }
        var last: ThreadInfo?
        let blocked = eventually {
            last = try? ThreadInfo.read(thread.tid)
            guard let info = last, info.state == .sleeping, case .inSyscall(let call) = info.syscall else { return false }
            return call.name == "read"
        }
        if !blocked {
            var byte: UInt8 = 1
            _ = write(writeFD, &byte, 1)
            thread.join()
        }
        try #require(blocked, "thread never showed as blocked in read(): \(String(describing: last))")
        let call = try #require(last?.syscall.blockedSyscall)
        #expect(call.arguments.count == 6)
        #expect(call.arguments.first == UInt64(readFD))
        #expect(call.arguments[2] == 1)  // the byte count passed to read
        #expect(call.stackPointer != 0)
        #expect(call.programCounter != 0)
        #expect(try FileDescriptorKind.describe(fd: readFD) == .pipe)

        var byte: UInt8 = 1
        #expect(write(writeFD, &byte, 1) == 1)
        thread.join()
    }

    @Test func blockedSignalsMatchTheThreadsOwnMask() throws {
        let reportedMask = Atomic<UInt64>(0)
        let masked = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let blocker = try JoinableThread(name: "sw-sigprof-blk") {
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGPROF)
            sigaddset(&set, SIGUSR2)
            pthread_sigmask(SIG_BLOCK, &set, nil)
            var current = sigset_t()
            pthread_sigmask(SIG_BLOCK, nil, &current)
            var mask: UInt64 = 0
            for signal in Int32(1)...64 where sigismember(&current, signal) == 1 {
                mask |= 1 << UInt64(signal - 1)
            }
            reportedMask.store(mask, ordering: .releasing)
            masked.signal()
            release.wait()
        }
        let open = try JoinableThread(name: "sw-sigprof-ok") {
            var set = sigset_t()
            sigemptyset(&set)
            sigaddset(&set, SIGPROF)
            pthread_sigmask(SIG_UNBLOCK, &set, nil)
            masked.signal()
            release.wait()
        }
        defer {
            release.signal()
            release.signal()
            blocker.join()
            open.join()
        }
        try #require(masked.wait(timeout: .now() + 5) == .success)
        try #require(masked.wait(timeout: .now() + 5) == .success)

        let blocked = try ThreadInfo.read(blocker.tid).signalsBlocked
        #expect(blocked.contains(SIGPROF))
        #expect(blocked.contains(SIGUSR2))
        #expect(blocked.rawValue == reportedMask.load(ordering: .acquiring))
        #expect(!(try ThreadInfo.read(open.tid).signalsBlocked.contains(SIGPROF)))
        // Test threads (main or the concurrency pool) leave SIGPROF open; libdispatch's own worker
        // threads block it (swift-corelibs-libdispatch `_dispatch_sigmask`), ours do not.
        #expect(!(try ThreadInfo.read(.current).signalsBlocked.contains(SIGPROF)))
        // A stall's evidence reads its thread through kept files, without the signal mask.
        let kept = try #require(StalledThreadRead.read(TaskFiles(.current)))
        #expect(kept.name == (try ThreadInfo.read(.current)).name)
        #expect(kept.state == (try ThreadInfo.read(.current)).state)
    }

    @Test func exitedThreadIsGone() throws {
        let thread = try JoinableThread(name: "sw-short-lived") {}
        thread.join()
        // pthread_join returns when the kernel clears the tid word, slightly before the task is
        // released, so allow the kernel a moment to finish tearing it down.
        var lastError: ThreadError?
        let gone = eventually {
            do throws(ThreadError) {
                _ = try ThreadInfo.read(thread.tid)
                return false
            } catch {
                lastError = error
                return error == .threadGone(thread.tid)
            }
        }
        #expect(gone, "expected threadGone, last error: \(String(describing: lastError))")
        #expect(throws: ThreadError.threadGone(thread.tid)) { try ThreadInfo.schedStat(thread.tid) }
        #expect(!(try ThreadList.current().contains(thread.tid)))
    }

    @Test func schedStatOfTheCurrentThreadCountsItsRunTime() throws {
        var spin: UInt64 = 0
        for i in 0..<200_000 { spin &+= UInt64(i) }
        #expect(spin > 0)
        let stat = try ThreadInfo.schedStat(.current)
        #expect(stat.runTime > .zero)
        #expect(stat.timeslices > 0)
    }

    @Test func fileDescriptorKinds() throws {
        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer {
            close(pair[0])
            close(pair[1])
        }
        guard case .socket(let inode) = try FileDescriptorKind.describe(fd: pair[0]) else {
            Issue.record("socketpair end is not described as a socket")
            return
        }
        #expect(inode > 0)

        let null = open("/dev/null", O_RDONLY)
        try #require(null >= 0)
        #expect(try FileDescriptorKind.describe(fd: null) == .file(path: "/dev/null"))
        close(null)
        // The descriptor just closed is free until something reuses it; a huge number never is open.
        #expect(try FileDescriptorKind.describe(fd: 1_000_000) == .closed)
    }

    @Test func fileDescriptorLinkTargets() {
        #expect(FileDescriptorKind(linkTarget: "socket:[12345]") == .socket(inode: 12345))
        #expect(FileDescriptorKind(linkTarget: "pipe:[77]") == .pipe)
        #expect(FileDescriptorKind(linkTarget: "/var/log/x y") == .file(path: "/var/log/x y"))
        #expect(FileDescriptorKind(linkTarget: "anon_inode:[eventfd]") == .eventfd)
        #expect(FileDescriptorKind(linkTarget: "anon_inode:[eventpoll]") == .epoll)
        #expect(FileDescriptorKind(linkTarget: "anon_inode:[timerfd]") == .timerfd)
        #expect(FileDescriptorKind(linkTarget: "anon_inode:[signalfd]") == .other("anon_inode:[signalfd]"))
        #expect(FileDescriptorKind(linkTarget: "socket:[oops]") == .other("socket:[oops]"))
    }

    @Test func syscallNames() {
        #if arch(x86_64)
        #expect(BlockedSyscall.name(of: 0) == "read")
        #expect(BlockedSyscall.name(of: 202) == "futex")
        #expect(BlockedSyscall.name(of: 232) == "epoll_wait")
        #expect(BlockedSyscall.name(of: 441) == "epoll_pwait2")
        #elseif arch(arm64)
        #expect(BlockedSyscall.name(of: 63) == "read")
        #expect(BlockedSyscall.name(of: 98) == "futex")
        #expect(BlockedSyscall.name(of: 202) == "accept")
        #expect(BlockedSyscall.name(of: 22) == "epoll_pwait")
        #endif
        #expect(BlockedSyscall.name(of: 9999) == "syscall_9999")
    }

    @Test func signalSet() {
        let set = SignalSet(rawValue: 0x1 | (1 << 26))  // SIGHUP (1) and SIGPROF (27)
        #expect(set.contains(1))
        #expect(set.contains(27))
        #expect(!set.contains(2))
        #expect(!set.contains(0))
        #expect(!set.contains(65))
        #expect(set.signals == [1, 27])
        #expect(SignalSet([1, 27]) == set)
        #expect(set.description == "0000000004000001")
        #expect(SignalSet(rawValue: .max).contains(64))
    }

    @Test func stateLettersAndCoding() throws {
        #expect(ThreadState(procLetter: "D") == .diskSleep)
        #expect(ThreadState(procLetter: "t") == .tracingStop)
        #expect(ThreadState(procLetter: "P") == .unknown("P"))
        let states: [ThreadState] = [.running, .sleeping, .diskSleep, .idle, .unknown("W")]
        let data = try JSONEncoder().encode(states)
        #expect(String(decoding: data, as: UTF8.self) == #"["running","sleeping","diskSleep","idle","W"]"#)
        #expect(try JSONDecoder().decode([ThreadState].self, from: data) == states)
    }

    @Test func threadErrorsSayWhatHappened() {
        #expect(ThreadError.threadGone(ThreadID(rawValue: 42)).description.contains("42"))
        let text = ThreadError.system(operation: "reading x", errno: ENOENT).description
        #expect(text.contains("reading x"))
        #expect(text.contains("No such file or directory"))
    }

    @Test func processStats() throws {
        let stats = try ProcessStats.current()
        #expect(stats.residentBytes > 0)
        #expect(stats.virtualBytes >= stats.residentBytes)
        #expect(stats.threadCount >= 1)
        #expect(stats.cpuTime > .zero)
    }
}

@Suite("Memory map table")
struct MemoryMapTableTests {
    @Test("20 000 mappings: the table grows instead of dropping the ones past its first 8 192")
    func growsPastItsFirstBlock() throws {
        _ = try StackSampler() // the table is built at install
        var grown: UInt64 = 0
        let found = sw_test_many_mappings(20_000, &grown)
        #expect(found == 1, "the last of 20 000 regions is not in the table (\(found))")
        #expect(grown >= 1)
    }

    @Test("A stack mapping that shrank after the table was read: every reader stops at its new end instead of faulting")
    func stackMappingShrankBehindTheTable() throws {
        _ = try StackSampler()
        let cutBefore = StackSampler.statistics.cut_at_unmapped
        var fp: UInt64 = 0, libunwind: UInt64 = 0, ringSamples: UInt64 = 0
        var stop: UInt32 = 0
        let rc = sw_test_walk_into_unmapped(&fp, &libunwind, &ringSamples, &stop)
        #expect(rc == 0, "capture failed: \(rc)")
        #expect(fp >= 1 && libunwind >= 1, "the late captures returned no frames (fp \(fp), libunwind \(libunwind))")
        #expect(ringSamples >= 1, "the ring took no sample after the unmap")
        // The fake record lies above the thread's own stack allocation (its thread pointer): the walk
        // stops there without reading it, or, for a stack not below its thread pointer, where the
        // kernel says the mapping now ends.
        #expect(stop == UInt32(SW_STOP_UNREADABLE) || StackSampler.statistics.cut_at_unmapped > cutBefore,
                "the walk neither stopped at the thread's stack nor was cut at the unmapped page (end \(stop))")
    }
}
