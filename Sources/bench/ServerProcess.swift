import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Stallwatch

/// One run of the example server as a child process: started, read from, measured through /proc,
/// stopped with SIGTERM.
final class ServerProcess {
    let process = Process()
    let port: Int
    private let output: LineLog

    /// Starts `binary` on a free port; returns once it prints "listening on 127.0.0.1:PORT".
    init(binary: String, watchdog: Bool, thresholdMilliseconds: Int, reportDirectory: String) throws {
        var env = ProcessInfo.processInfo.environment
        env["PORT"] = "0"
        env["STALLWATCH_THRESHOLD_MS"] = String(thresholdMilliseconds)
        env["STALLWATCH_REPORT_DIR"] = reportDirectory
        // The "off" side is the example's twin target with the same routes and no watchdog.
        let executable = watchdog ? binary : URL(fileURLWithPath: binary).deletingLastPathComponent()
            .appendingPathComponent("HummingbirdServerBare").path
        process.executableURL = URL(fileURLWithPath: executable)
        process.environment = env
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        let log = LineLog()
        output = log
        out.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if !data.isEmpty { log.append(data) }
        }
        try process.run()
        guard log.port.wait(timeout: .now() + 30) == .success, let seen = log.seenPort else {
            process.terminate()
            throw BenchError("\(binary) did not print its port within 30 s")
        }
        port = seen
    }

    var pid: Int32 { process.processIdentifier }

    /// Lines the server printed that are stall events (none are expected under a healthy load).
    var stallEvents: Int {
        output.lines.filter { $0.hasPrefix("{") && $0.contains("\"event\":\"stall\"") }.count
    }

    /// CPU time of the thread named `name` (the watchdog is "stallwatch"), ns, from its schedstat; nil when absent.
    func threadCPUNanoseconds(named name: String) -> Int? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for tid in tasks {
            let comm = (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            guard comm == name, let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/schedstat", encoding: .utf8),
                  let first = stat.split(separator: " ").first, let ns = Int(first) else { continue }
            return ns
        }
        return nil
    }

    /// Scheduler figures of the threads whose name satisfies `matches`, summed (from each thread's
    /// `schedstat`): how many there are, their CPU time (ns) and how many times they were put on a
    /// CPU (timeslices: a thread asleep in `epoll_wait` or a futex gets one per wake-up).
    func schedStats(threads matches: (String) -> Bool) -> ThreadSchedStats {
        var total = ThreadSchedStats()
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for tid in tasks {
            guard let comm = (try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines), matches(comm),
                  let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(tid)/schedstat", encoding: .utf8) else { continue }
            let fields = stat.split(separator: " ").compactMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            guard fields.count >= 3 else { continue }
            total.threads += 1
            total.cpuNanoseconds += fields[0]
            total.timeslices += fields[2]
        }
        return total
    }

    /// CPU time of the whole process (utime + stime, all threads, the exited ones included), ns.
    func processCPUNanoseconds() -> Int {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        // Fields after the command name: state is field 3; utime and stime are fields 14 and 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return 0 }
        return (user + system) * 1_000_000_000 / sysconf(Int32(_SC_CLK_TCK))
    }

    /// GET `path` on the server with curl-free plain sockets (URLSession is heavy): the body, or nil.
    func get(_ path: String) -> String? { Self.get(path, port: port) }

    /// The same from any thread, given only the port (the process object is not Sendable).
    static func get(_ path: String, port: Int) -> String? {
        let fd = socket(AF_INET, SocketType.stream, 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
        var response = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            response += buffer[0..<n]
        }
        let text = String(decoding: response, as: UTF8.self)
        return text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) }
    }

    /// Signal captures the server's sampler answered since it started (`/stallwatch/stats`), or nil.
    func samplerCapturesAnswered() -> Int? {
        guard let body = get("/stallwatch/stats"), let data = body.data(using: .utf8),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return (object["handled"] as? NSNumber)?.intValue
    }

    /// SIGTERM, then waits for the exit (SIGKILL after 10 s).
    func stop() {
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }
}

/// The server's output lines, appended from the pipe's reader and read by the bench.
private final class LineLog: @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`, except `port`, a semaphore.
    private let lock = NSLock()
    private var all: [String] = []
    private var pending = ""
    private var listening: Int?
    let port = DispatchSemaphore(value: 0)

    func append(_ data: Data) {
        lock.withLock {
            pending += String(decoding: data, as: UTF8.self)
            while let newline = pending.firstIndex(of: "\n") {
                let line = String(pending[..<newline])
                pending.removeSubrange(...newline)
                all.append(line)
                let prefix = "listening on 127.0.0.1:"
                if listening == nil, line.hasPrefix(prefix), let p = Int(line.dropFirst(prefix.count).prefix { $0.isNumber }) {
                    listening = p
                    port.signal()
                }
            }
        }
    }

    var lines: [String] { lock.withLock { all } }
    var seenPort: Int? { lock.withLock { listening } }
}

/// Summed `schedstat` figures of a set of threads.
struct ThreadSchedStats: Codable {
    var threads = 0
    var cpuNanoseconds = 0
    var timeslices = 0

    /// The change from `earlier` to this, per second of `seconds`.
    func rates(since earlier: ThreadSchedStats, seconds: Double) -> (cpuPercent: Double, wakeupsPerSecond: Double) {
        (Double(cpuNanoseconds - earlier.cpuNanoseconds) / 1e9 / seconds * 100,
         Double(timeslices - earlier.timeslices) / seconds)
    }
}
