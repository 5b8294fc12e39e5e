import Dispatch
import Foundation
import Glibc
import StallwatchPolicy
import StallwatchReport
import Synchronization
import Testing
@testable import Stallwatch

@inline(never)
func lockFixtureHolderSpin(milliseconds: Int) -> UInt64 {
    let end = ContinuousClock.now + .milliseconds(milliseconds)
    var x: UInt64 = 1
    while ContinuousClock.now < end {
        for _ in 0..<1000 { x = x &* 6364136223846793005 &+ 1442695040888963407 }
    }
    return x
}

/// Locks of every kind a server uses, held from a box the test's threads share.
final class LockBox: @unchecked Sendable {
    let nsLock = NSLock()
    let mutex = Mutex(0)
    let semaphore = DispatchSemaphore(value: 0)
    let pthread: UnsafeMutablePointer<pthread_mutex_t>
    let second: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        pthread = .allocate(capacity: 1)
        second = .allocate(capacity: 1)
        pthread_mutex_init(pthread, nil)
        pthread_mutex_init(second, nil)
    }

    deinit {
        pthread_mutex_destroy(pthread)
        pthread_mutex_destroy(second)
        pthread.deallocate()
        second.deallocate()
    }
}

/// Names the calling thread as `ps` and `/proc` show it (glibc's pthread_setname_np is not
/// imported without _GNU_SOURCE).
func nameThisThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY)
    guard fd >= 0 else { return }
    _ = name.withCString { write(fd, $0, strlen($0)) }
    close(fd)
}

/// Takes and drops `lock` from a synchronous function (NSLock's methods are not for async code).
func lockFixtureTakeAndDrop(_ lock: NSLock) {
    lock.lock()
    lock.unlock()
}

/// Takes `lock`, says so, computes for `milliseconds` and drops it (from a pool job: NSLock's
/// methods are not for async code).
func lockFixtureHoldWhileComputing(_ lock: NSLock, milliseconds: Int, holding: () -> Void) {
    lock.lock()
    holding()
    _ = lockFixtureHolderSpin(milliseconds: milliseconds)
    lock.unlock()
}

/// A thread that names itself, takes a lock, says so, holds it while it computes, and lets it go.
func startHolder(name: String, hold: Duration, lock: @escaping @Sendable (@Sendable () -> Void) -> Void) -> TestThread {
    let held = Atomic<Bool>(false)
    let thread = TestThread(name: name) { _ in
        nameThisThread(name)
        lock {
            held.store(true, ordering: .releasing)
            _ = lockFixtureHolderSpin(milliseconds: Int(hold / .milliseconds(1)))
        }
    }
    while !held.load(ordering: .acquiring) { usleep(200) }
    return thread
}

/// Who holds the lock a stalled thread waits on: named from the lock's memory (glibc's mutex owner
/// field, a PI futex word), with the holder's stack taken in the same round; "no owner" for a
/// semaphore; a two-thread cycle reported once as a deadlock.
@Suite("Lock holders", .serialized)
struct LockHolderTests {
    static let threshold = Duration.milliseconds(300)

    /// Runs `body` on a heartbeat loop watched by a fresh watchdog, and returns the events once it
    /// has returned and the stall has ended.
    func watchLoop(_ name: String, poolJobs: Bool = false, _ body: @escaping @Sendable () -> Void) throws -> EventLog {
        let log = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: Self.threshold, watchPoolJobs: poolJobs)) {
            log.append($0)
        }
        let probe = watchdog.makeProbe(name: name)
        try watchdog.start()
        defer { watchdog.stop() }
        let worker = TestThread(name: "sw-waiter") { _ in
            probe.busy()
            body()
            probe.idle()
        }
        worker.stopAndJoin(timeout: .seconds(10))
        #expect(eventually(timeout: .seconds(2)) { !log.ended.isEmpty })
        return log
    }

    func names(_ frames: [ReportFrame]) -> [String] { frames.compactMap(\.symbol) }

    /// The report of a loop waiting `hold` on a lock held by a computing thread named `sw-holder`.
    func expectHolderNamed(_ log: EventLog, holder: TestThread, primitive: LockPrimitive) throws {
        #expect(log.stalls.count == 1, "\(log.stalls.map { $0.cause?.evidence ?? "" })")
        let report = try #require(log.stalls.first)
        let lock = try #require(report.lockWait, "\(report.cause?.evidence ?? "no cause")")
        let tid = try #require(holder.tid)
        #expect(report.cause?.kind == .lockWait, "\(report.cause?.evidence ?? "")")
        #expect(lock.ownership == .held, "\(lock.summary)")
        #expect(lock.primitive == primitive)
        #expect(lock.holder?.thread.id == tid.rawValue, "\(lock.summary)")
        #expect(lock.holder?.thread.name == "sw-holder")
        #expect(names(lock.holder?.frames ?? []).contains { $0.contains("lockFixtureHolderSpin") },
                "\(names(lock.holder?.frames ?? []))")
        #expect(lock.summary.hasPrefix("waiting on a lock held by thread \(tid.rawValue) (sw-holder), which is in "), "\(lock.summary)")
        #expect(report.cause?.evidence.contains("held by thread \(tid.rawValue) (sw-holder)") == true)
        #expect(lock.deadlock == false)
    }

    // MARK: - reads of a live lock, without a watchdog

    /// Waits until `waiter` is blocked in `futex`, then reads its lock.
    func readWait(of waiter: TestThread) throws -> LockWaitRead {
        let tid = try #require(waiter.tid)
        var read: LockWaitRead?
        #expect(eventually(timeout: .seconds(2)) {
            read = LockWaitRead.read(tid)
            return read != nil
        })
        return try #require(read)
    }

    @Test("a pthread mutex's holder is read from the mutex, checked twice")
    func readPthreadMutex() throws {
        let box = LockBox()
        let holder = startHolder(name: "sw-holder", hold: .milliseconds(600)) { body in
            pthread_mutex_lock(box.pthread); body(); pthread_mutex_unlock(box.pthread)
        }
        let waiter = TestThread(name: "sw-waiter") { _ in pthread_mutex_lock(box.pthread); pthread_mutex_unlock(box.pthread) }
        let read = try readWait(of: waiter)
        #expect(read.owner == holder.tid)
        #expect(read.address == UInt64(UInt(bitPattern: box.pthread)))
        #expect(read.ownerStable == true)
        holder.stopAndJoin(); waiter.stopAndJoin()
    }

    @Test("a thread locking a plain mutex it holds: a deadlock of one thread")
    func readSelfDeadlock() throws {
        let box = LockBox()
        let waiter = TestThread(name: "sw-self") { _ in
            pthread_mutex_lock(box.pthread)
            pthread_mutex_lock(box.pthread)   // a normal mutex: waits on itself
            pthread_mutex_unlock(box.pthread)
        }
        let read = try readWait(of: waiter)
        #expect(read.owner == waiter.tid)
        let chain = LockWaitRead.chain(from: read)
        #expect(chain.cycle && chain.hops.count == 1)
        // glibc does not check the owner of a normal mutex on unlock: the test ends the wait.
        pthread_mutex_unlock(box.pthread)
        waiter.stopAndJoin()
    }

    @Test("Synchronization.Mutex keeps its owner in the futex word (FUTEX_LOCK_PI)")
    func readSwiftMutex() throws {
        let box = LockBox()
        let holder = startHolder(name: "sw-holder", hold: .milliseconds(600)) { body in box.mutex.withLock { _ in body() } }
        let waiter = TestThread(name: "sw-waiter") { _ in box.mutex.withLock { _ in } }
        let read = try readWait(of: waiter)
        #expect(read.owner == holder.tid)
        #expect(read.verdict == .owner(tid: holder.tid?.rawValue ?? 0, primitive: .ownerInWord))
        holder.stopAndJoin(); waiter.stopAndJoin()
    }

    @Test("a DispatchSemaphore wait has no owner")
    func readSemaphore() throws {
        let box = LockBox()
        let waiter = TestThread(name: "sw-waiter") { _ in box.semaphore.wait() }
        let read = try readWait(of: waiter)
        #expect(read.owner == nil)
        guard case .noOwner(.counter, _) = read.verdict else { Issue.record("\(read.verdict)"); return }
        box.semaphore.signal()
        waiter.stopAndJoin()
    }

    // MARK: - reports

    @Test("a loop waiting on an NSLock held by a computing thread: the holder, its name and its function")
    func nsLockHolder() throws {
        let box = LockBox()
        let holder = startHolder(name: "sw-holder", hold: .milliseconds(1500)) { body in box.nsLock.lock(); body(); box.nsLock.unlock() }
        let log = try watchLoop("nslock-loop") { box.nsLock.lock(); box.nsLock.unlock() }
        try expectHolderNamed(log, holder: holder, primitive: .pthreadMutex)
        holder.stopAndJoin()
    }

    @Test("a loop waiting on a pthread mutex held by a computing thread: the holder named")
    func pthreadHolder() throws {
        let box = LockBox()
        let holder = startHolder(name: "sw-holder", hold: .milliseconds(1200)) { body in
            pthread_mutex_lock(box.pthread); body(); pthread_mutex_unlock(box.pthread)
        }
        let log = try watchLoop("pthread-loop") { pthread_mutex_lock(box.pthread); pthread_mutex_unlock(box.pthread) }
        try expectHolderNamed(log, holder: holder, primitive: .pthreadMutex)
        holder.stopAndJoin()
    }

    @Test("a loop waiting on a Synchronization.Mutex: the holder named from the PI futex word")
    func swiftMutexHolder() throws {
        let box = LockBox()
        let holder = startHolder(name: "sw-holder", hold: .milliseconds(1200)) { body in box.mutex.withLock { _ in body() } }
        let log = try watchLoop("mutex-loop") { box.mutex.withLock { _ in } }
        try expectHolderNamed(log, holder: holder, primitive: .ownerInWord)
        holder.stopAndJoin()
    }

    @Test("a loop waiting on a DispatchSemaphore: lock wait, 'no owner', nobody named")
    func semaphoreNoOwner() throws {
        let box = LockBox()
        let signaller = TestThread(name: "sw-signal") { _ in usleep(1_000_000); box.semaphore.signal() }
        let log = try watchLoop("sema-loop") { box.semaphore.wait() }
        signaller.stopAndJoin()
        let report = try #require(log.stalls.first)
        let lock = try #require(report.lockWait, "\(report.cause?.evidence ?? "")")
        #expect(lock.ownership == .noOwner)
        #expect(lock.holder == nil)
        #expect(lock.summary.hasPrefix("no owner"), "\(lock.summary)")
        #expect(report.cause?.kind == .lockWait)
        #expect(report.cause?.evidence.contains("no owner") == true)
    }

    @Test("a pool job waiting on an NSLock held by a plain thread: the holder named in the job's report")
    func poolJobHolder() async throws {
        let box = LockBox()
        let log = EventLog()
        let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: Self.threshold)) { log.append($0) }
        try watchdog.start()
        defer { watchdog.stop() }
        let holder = startHolder(name: "sw-holder", hold: .milliseconds(1500)) { body in box.nsLock.lock(); body(); box.nsLock.unlock() }
        await Task.detached { lockFixtureTakeAndDrop(box.nsLock) }.value
        try await Task.sleep(for: .milliseconds(300))
        holder.stopAndJoin()
        let reports = log.allStalls.filter { $0.loopName == PoolJobWatcher.loopName }
        #expect(reports.count == 1, "\(reports.map { $0.cause?.evidence ?? "" })")
        let report = try #require(reports.first)
        let lock = try #require(report.lockWait, "\(report.cause?.evidence ?? "")")
        #expect(lock.holder?.thread.id == holder.tid?.rawValue, "\(lock.summary)")
        #expect(lock.holder?.thread.name == "sw-holder")
        #expect(names(lock.holder?.frames ?? []).contains { $0.contains("lockFixtureHolderSpin") })
    }

    @Test("a loop waiting on an NSLock a pool job holds while it computes: the pool thread named, with its stack")
    func poolHolder() throws {
        let box = LockBox()
        let held = Atomic<Bool>(false)
        let tid = Mutex<Int32>(0)
        // The pool's threads block the sampling signal: the holder's stack must come another way.
        let job = Task.detached {
            lockFixtureHoldWhileComputing(box.nsLock, milliseconds: 1200) {
                tid.withLock { $0 = ThreadID.current.rawValue }
                held.store(true, ordering: .releasing)
            }
        }
        while !held.load(ordering: .acquiring) { usleep(200) }
        let log = try watchLoop("pool-holder-loop") { lockFixtureTakeAndDrop(box.nsLock) }
        let done = DispatchSemaphore(value: 0)
        Task { await job.value; done.signal() }
        done.wait()
        let report = try #require(log.stalls.first)
        let lock = try #require(report.lockWait, "\(report.cause?.evidence ?? "")")
        let holder = tid.withLock { $0 }
        #expect(lock.holder?.thread.id == holder, "\(lock.summary)")
        #expect(names(lock.holder?.frames ?? []).contains { $0.contains("lockFixtureHolderSpin") },
                "\(lock.summary): \(names(lock.holder?.frames ?? []))")
    }

    @Test("two loops each waiting on the other's mutex: one deadlock report with both stacks")
    func deadlock() throws {
        let box = LockBox()
        let log = EventLog()
        let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: Self.threshold)) { log.append($0) }
        let probes = [watchdog.makeProbe(name: "cycle-a"), watchdog.makeProbe(name: "cycle-b")]
        try watchdog.start()
        defer { watchdog.stop() }
        let holding = Atomic<Int>(0)
        // Both give up at the same wall-clock time: a deadlock of plain mutexes has no other end.
        var giveUp = timespec()
        clock_gettime(CLOCK_REALTIME, &giveUp)
        giveUp.tv_sec += 2
        let deadline = giveUp
        let locks = [box.pthread, box.second].map { UInt(bitPattern: $0) }
        let threads = (0..<2).map { i in
            TestThread(name: "sw-cycle-\(i)") { _ in
                nameThisThread("sw-cycle-\(i)")
                let own = UnsafeMutablePointer<pthread_mutex_t>(bitPattern: locks[i])!
                let other = UnsafeMutablePointer<pthread_mutex_t>(bitPattern: locks[1 - i])!
                probes[i].busy()
                pthread_mutex_lock(own)
                holding.add(1, ordering: .acquiringAndReleasing)
                while holding.load(ordering: .acquiring) < 2 { usleep(100) }
                var until = deadline
                if pthread_mutex_timedlock(other, &until) == 0 { pthread_mutex_unlock(other) }
                pthread_mutex_unlock(own)
                // Still busy once the cycle has come apart: the same stall, not a second report.
                usleep(300_000)
                probes[i].idle()
            }
        }
        for t in threads { t.stopAndJoin(timeout: .seconds(10)) }
        // The cycle's other stall is not reported, so its end is not announced either.
        #expect(eventually(timeout: .seconds(2)) { log.ended.count == 1 })
        let deadlocks = log.stalls.filter { $0.lockWait?.deadlock == true }
        #expect(log.stalls.count == 1, "\(log.stalls.map { ($0.loopName ?? "", $0.cause?.evidence ?? "") })")
        #expect(deadlocks.count == 1)
        let report = try #require(deadlocks.first)
        #expect(report.cause?.kind == .deadlock, "\(report.cause?.evidence ?? "")")
        let chain = try #require(report.lockWait?.chain)
        #expect(chain.count == 2)
        let tids = Set(threads.compactMap { $0.tid?.rawValue })
        #expect(Set(chain.map(\.holder.thread.id)) == tids)
        #expect(Set(chain.map(\.waiter.id)) == tids)
        for link in chain {
            #expect(names(link.holder.frames).contains { $0.contains("pthread_mutex") || $0.contains("lll_lock") || $0.contains("LockHolderTests") },
                    "\(names(link.holder.frames))")
        }
        #expect(report.lockWait?.summary.hasPrefix("deadlock: ") == true, "\(report.lockWait?.summary ?? "")")
    }
}
