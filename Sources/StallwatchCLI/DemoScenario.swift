#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Stallwatch

/// Stalls the demo can cause, each in a function whose name the report should blame.
enum DemoScenario: String, CaseIterable, Sendable {
    case cpu, lock, socket, sleep, healthy

    /// Runs one unit of the loop's work.
    func work(seconds: Double, lock: UnsafeMutablePointer<pthread_mutex_t>, socket: Int32) {
        switch self {
        case .cpu: demoComputeChecksums(seconds: seconds)
        case .lock: demoWaitForAccountLock(lock)
        case .socket: demoReadUpstreamResponse(socket)
        case .sleep: demoBackOffBeforeRetry(seconds: seconds)
        case .healthy: demoShortRequest()
        }
    }
}

@inline(never)
func demoComputeChecksums(seconds: Double) {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    let end = Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9 + seconds
    var x: UInt64 = 1
    while true {
        for _ in 0..<10_000 { x = x &* 6364136223846793005 &+ 1442695040888963407 }
        clock_gettime(CLOCK_MONOTONIC, &ts)
        if Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9 >= end { break }
    }
    if x == 42 { print("") }
}

@inline(never)
func demoWaitForAccountLock(_ lock: UnsafeMutablePointer<pthread_mutex_t>) {
    pthread_mutex_lock(lock)
    pthread_mutex_unlock(lock)
}

@inline(never)
func demoReadUpstreamResponse(_ fd: Int32) {
    var buffer = [UInt8](repeating: 0, count: 64)
    _ = read(fd, &buffer, buffer.count)
}

@inline(never)
func demoBackOffBeforeRetry(seconds: Double) {
    demoSleep(seconds: seconds)
}

/// Sleeps `seconds` (finite, ≥ 0; validated by the command), resuming after signals. `usleep`
/// takes a 32-bit count of microseconds: a conversion of more than 71 minutes would trap.
func demoSleep(seconds: Double) {
    let whole = seconds.rounded(.down)
    var request = timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0, errno == EINTR { request = remaining }
}

@inline(never)
func demoShortRequest() {
    usleep(2_000)
}

/// A healthy unit of work that keeps the loop busy most of the time: a fixed number of iterations
/// (not a fixed time), so a process stopped in the middle still has work left when continued.
@inline(never)
func demoHealthyBatch() {
    var x: UInt64 = 1
    for _ in 0..<3_000_000 { x = x &* 6364136223846793005 &+ 1442695040888963407 }
    if x == 42 { print("") }
}
