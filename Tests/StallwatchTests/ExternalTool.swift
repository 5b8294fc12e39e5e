import Foundation
import Testing

/// A program a test runs: a real consumer of an export (`go`, `protoc`, `chromium`), a system tool,
/// or this package's `stallwatch` command.
struct ExternalTool {
    let path: String

    /// `true` in CI (`CI=true`): a missing tool fails its tests there instead of skipping them.
    static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// The tool on `PATH`, or `nil`.
    static func find(_ name: String) -> ExternalTool? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for dir in path.split(separator: ":") {
            let candidate = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return ExternalTool(path: candidate) }
        }
        return nil
    }

    /// Whether a test needing `names` should run: always in CI (where it then fails if one is
    /// missing), locally only when all are installed.
    static func available(_ names: String...) -> Bool {
        isCI || names.allSatisfy { find($0) != nil }
    }

    /// The tool, or a recorded failure naming the package that provides it.
    static func require(_ name: String, package: String) throws -> ExternalTool {
        guard let tool = find(name) else {
            throw ToolMissing(description: "\(name) is not installed (Debian package \(package); scripts/install-deps.sh installs it)")
        }
        return tool
    }

    /// This package's `stallwatch` command, built beside the test bundle (`swift build --build-tests`).
    static func stallwatch() throws -> ExternalTool {
        let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [dir, dir.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("stallwatch").path
            if FileManager.default.isExecutableFile(atPath: path) { return ExternalTool(path: path) }
        }
        throw ToolMissing(description: "the stallwatch command is not built next to the tests in \(dir.path)")
    }

    struct ToolMissing: Error, CustomStringConvertible {
        let description: String
    }

    struct Result {
        var status: Int32
        /// `false` when the process died of a signal (SIGILL from a trap, SIGSEGV …).
        var exited: Bool
        var stdout: Data
        var stderr: String
        var output: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs the tool to completion (stopped after `timeout`: SIGTERM, then SIGKILL 2 s later),
    /// stdin from /dev/null.
    func run(_ arguments: [String], environment: [String: String] = [:], timeout: Duration = .seconds(120)) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        try process.run()
        // Read both pipes while it runs: a full pipe would block the child.
        // On threads of their own: two blocked readers would fill a 2-core machine's global queue
        // and starve the timeout.
        let group = DispatchGroup()
        nonisolated(unsafe) var stdout = Data(), stderr = Data()
        for (handle, isOut) in [(out.fileHandleForReading, true), (err.fileHandleForReading, false)] {
            group.enter()
            Thread {
                let data = handle.readDataToEndOfFile()
                if isOut { stdout = data } else { stderr = data }
                group.leave()
            }.start()
        }
        let done = DispatchSemaphore(value: 0)
        Thread {
            if done.wait(timeout: .now() + .seconds(Int(timeout.components.seconds))) == .timedOut, process.isRunning {
                process.terminate()
                // A child spawned from a libdispatch thread inherits its signal mask, SIGTERM
                // blocked included (Foundation's Process does not reset it): then only SIGKILL stops it.
                if done.wait(timeout: .now() + .seconds(2)) == .timedOut, process.isRunning {
                    kill(process.processIdentifier, SIGKILL)
                }
            }
        }.start()
        process.waitUntilExit()
        done.signal()
        group.wait()
        return Result(status: process.terminationStatus, exited: process.terminationReason == .exit,
                      stdout: stdout, stderr: String(decoding: stderr, as: UTF8.self))
    }
}

/// A fresh private directory under the system temporary directory.
func scratchDirectory(_ label: String) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    return path
}
