import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Stalls the demo causes on the Swift concurrency pool rather than on a loop of its own: the
/// process's very first pool job stalling (CPU-bound, blocked, as a child task, after an async
/// chain that really suspended), and every pool worker blocked at once (the pool deadlock). Each
/// stalls in a function whose name the report should blame.
enum DemoPoolScenario: String, CaseIterable, Sendable {
    case poolFirstCPU = "pool-first-cpu"
    case poolFirstBlocked = "pool-first-blocked"
    case poolFirstChild = "pool-first-child"
    case poolFirstAsync = "pool-first-async"
    case poolDeadlock = "pool-deadlock"
    case poolDeadlockTimeout = "pool-deadlock-timeout"

    /// Whether the pool's own ping (`PingProbe.cooperativePool()`) is watched too.
    var pingsPool: Bool { self == .poolDeadlock || self == .poolDeadlockTimeout }

    /// Starts the stall on the pool and returns at once; the stall lasts `seconds`.
    func start(seconds: Double) {
        switch self {
        case .poolFirstCPU:
            Task { demoPoolComputeChecksums(seconds: seconds) }
        case .poolFirstBlocked:
            Task { demoPoolWaitForUpstream(seconds: seconds) }
        case .poolFirstChild:
            Task {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { demoPoolComputeChecksums(seconds: seconds) }
                }
            }
        case .poolFirstAsync:
            Task { await demoPoolRoute(seconds: seconds) }
        case .poolDeadlock, .poolDeadlockTimeout:
            // One job more than the pool has workers, at the priority of the pool's ping
            // (each priority has a pool of its own): every worker waits, one job waits for a worker.
            let jobs = max(Int(sysconf(Int32(_SC_NPROCESSORS_CONF))), 1) + 1
            let gate = DispatchSemaphore(value: 0)
            for _ in 0..<jobs {
                if self == .poolDeadlock {
                    Task(priority: .medium) { demoPoolWaitForSignal(gate) }
                } else {
                    Task(priority: .medium) { demoPoolWaitForSignal(gate, seconds: seconds) }
                }
            }
            guard self == .poolDeadlock else { return }
            // The signal no job can send comes from a plain thread, after the stall.
            Thread.detachNewThread {
                demoSleep(seconds: seconds)
                for _ in 0..<jobs { gate.signal() }
            }
        }
    }
}

@inline(never)
func demoPoolComputeChecksums(seconds: Double) {
    demoComputeChecksums(seconds: seconds)
}

@inline(never)
func demoPoolWaitForUpstream(seconds: Double) {
    demoSleep(seconds: seconds)
}

/// The classic pool deadlock: a job waits for a signal that only another job (never started,
/// as every worker waits too) would send. Here a plain thread sends it after the stall.
@inline(never)
func demoPoolWaitForSignal(_ gate: DispatchSemaphore) {
    gate.wait()
}

/// The same wait with a timeout instead of a rescuer.
@inline(never)
func demoPoolWaitForSignal(_ gate: DispatchSemaphore, seconds: Double) {
    _ = gate.wait(timeout: .now() + seconds)
}

/// A route that awaits a service, which awaits a repository: each suspends once for real.
@inline(never)
func demoPoolRoute(seconds: Double) async {
    try? await Task.sleep(for: .milliseconds(2))
    await demoPoolService(seconds: seconds)
}

@inline(never)
func demoPoolService(seconds: Double) async {
    try? await Task.sleep(for: .milliseconds(2))
    demoPoolComputeChecksums(seconds: seconds)
}
