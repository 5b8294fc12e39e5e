import CSampler
import Dispatch
import Synchronization

/// Runs the async-chain probe's jobs on a thread of Stallwatch's own, never on the service's
/// cooperative pool: a probe job on the pool is a pool job like any other, so a service that
/// saturates its cores at start-up used to see Stallwatch's own utility-priority probe starve
/// there for 600 ms and be reported as a stall. The runtime runs a task executor's jobs through
/// the same job runner as the pool's, which is what the probe learns.
final class ProbeThreadExecutor: TaskExecutor {
    private let queue = Mutex<[UnownedJob]>([])
    private let ready = DispatchSemaphore(value: 0)
    private let closed = Atomic<Bool>(false)

    /// Starts the thread, with `name` as its kernel name (a thread created by a pool worker would
    /// otherwise keep the worker's `…-qos` name, which the pool watcher goes by); it ends after
    /// `close()` once its queue is empty.
    init(name: String) throws(PlatformThread.StartFailure) {
        let thread = try PlatformThread.start { [self] in
            _ = sw_thread_set_name(name)
            run()
        }
        thread.detach()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        queue.withLock { $0.append(unowned) }
        ready.signal()
    }

    /// Lets the thread end once it has run what is queued.
    func close() {
        closed.store(true, ordering: .releasing)
        ready.signal()
    }

    private func run() {
        while true {
            ready.wait()
            let jobs = queue.withLock { jobs -> [UnownedJob] in
                defer { jobs.removeAll() }
                return jobs
            }
            for job in jobs { job.runSynchronously(on: asUnownedTaskExecutor()) }
            if jobs.isEmpty && closed.load(ordering: .acquiring) { return }
        }
    }
}
