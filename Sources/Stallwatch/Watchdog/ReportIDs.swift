#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Report ids that name one report: across every watchdog of the process (a counter per engine
/// restarted at 1 for each new `Watchdog`, so 31 watchdogs in a row shared two ids) and across
/// restarts of the process (a pid alone repeats: a container's service is pid 1 on every start).
///
/// An id is `<pid>-<token>-<n>`: the pid keeps a forked child's ids apart from its parent's (they
/// share the token and the counter), the token is drawn at random once per process, and `n` counts
/// every report of the process.
enum ReportIDs {
    private static let counter = Atomic<UInt64>(0)

    /// 64 random bits, drawn once per process: two runs of a service share it with probability
    /// about 2⁻⁶⁴ per pair.
    static let processToken: String = {
        var generator = SystemRandomNumberGenerator()
        let bits = generator.next() as UInt64
        let hex = String(bits, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }()

    /// The next id of this process.
    static func next() -> String {
        let n = counter.add(1, ordering: .relaxed).newValue
        return "\(getpid())-\(processToken)-\(n)"
    }
}
