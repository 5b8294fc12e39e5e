import Dispatch

extension PingProbe {
    /// Watches a Dispatch queue (the main queue included): the watchdog's ping is an `async` job on
    /// it, so a queue whose current job runs too long is reported, with the thread that ran the
    /// queue's previous ping as the one sampled.
    public static func dispatchQueue(_ queue: DispatchQueue, name: String) -> PingProbe {
        PingProbe(name: name) { job in queue.async(execute: job) }
    }

    /// Watches the Swift concurrency cooperative pool at one priority: the ping is a detached task
    /// that must start in time. On Linux each priority has its own pool queue, as wide as the CPU
    /// count, so a pool starved by blocking work is reported; the report's other-thread stacks show
    /// what every pool thread is doing.
    ///
    /// An idle pool is not woken: while the watchdog watches pool jobs (`WatchdogConfiguration.watchPoolJobs`,
    /// the default), a pool with a worker waiting for work is known free from that worker's thread,
    /// and the ping is posted only when every worker is away from its wait.
    public static func cooperativePool(name: String = "cooperative-pool", priority: TaskPriority = .medium) -> PingProbe {
        PingProbe(name: name, target: .cooperativePool) { job in
            Task.detached(priority: priority) { job() }
        }
    }
}
