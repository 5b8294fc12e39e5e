import Foundation
import Glibc
import StallwatchReport
import Testing
@testable import Stallwatch

/// One request's blocking work, the same code for every request (a route handler that blocks).
@inline(never)
func backToBackFixtureServe(route: String, milliseconds: Int) async -> UInt64 {
    StallAttribution.serving(method: "GET", route: route) {
        poolFixtureSpin(milliseconds: milliseconds)
    }
}

/// A started watchdog watching pool jobs (its reports in a fresh directory), for the tests below.
private func poolJobWatchdog(threshold: Duration) async throws -> (Watchdog, directory: String) {
    let directory = temporaryDirectory("pool-jobs")
    let watchdog = try Watchdog(configuration: WatchdogConfiguration(threshold: threshold),
                                reportDirectory: directory, metrics: nil)
    try watchdog.start()
    try await Task.sleep(for: .milliseconds(200))
    return (watchdog, directory)
}

/// The final pool-job stall reports stored in `directory`, oldest first, and one line per report.
private func finalPoolJobStalls(in directory: String) -> (reports: [StallReport], summary: [String]) {
    let reports = storedReports(directory)
        .filter { $0.kind == .stall && $0.loopName == PoolJobWatcher.loopName && $0.durationIsFinal }
        .sorted { $0.startTimeUnixNanoseconds < $1.startTimeUnixNanoseconds }
    return (reports, reports.map { "\($0.request?.route ?? "-") \($0.durationNanoseconds / 1_000_000) ms" })
}

@Suite("Back-to-back pool jobs", .serialized)
struct BackToBackJobTests {
    /// Under steady load a blocking handler runs for request after request on the same worker, with
    /// no scan seeing the worker between two of them. The jobs' stacks are the same, so they were
    /// taken for one job: one long stall naming one request (the Hummingbird example, 300 requests
    /// blocking 150 ms each at a 100 ms threshold, gave 54 reports for 100 requests, some of them
    /// 900 ms long). Twice as many jobs as pool threads, queued at once: the second wave runs right
    /// after the first on the same workers. Each is one stall, naming its own request.
    @Test("back-to-back jobs of one handler for different requests: one stall each, each naming its request")
    func oneStallPerRequest() async throws {
        let (watchdog, directory) = try await poolJobWatchdog(threshold: .milliseconds(300))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let jobs = 2 * ProcessInfo.processInfo.activeProcessorCount
        let job = Duration.milliseconds(600)
        let tasks = (0..<jobs).map { i in
            Task.detached { await backToBackFixtureServe(route: "/job/\(i)", milliseconds: 600) }
        }
        for t in tasks { _ = await t.value }
        var waited = Duration.zero
        while finalPoolJobStalls(in: directory).reports.count < jobs && waited < .seconds(5) {
            try await Task.sleep(for: .milliseconds(50))
            waited += .milliseconds(50)
        }
        watchdog.stop()
        let (reports, summary) = finalPoolJobStalls(in: directory)
        #expect(reports.count == jobs, "\(summary)")
        let routes = Set(reports.compactMap { $0.request?.route })
        #expect(routes.count == reports.count, "each report names its own request: \(summary)")
        // Each is one job long, not two (the boundary is placed between two scans: ± 20 ms).
        #expect(reports.allSatisfy { Duration.nanoseconds($0.durationNanoseconds) < job + .milliseconds(150) }, "\(summary)")
    }
}

@Suite("Sequential pool jobs with short pauses", .serialized)
struct SequentialJobTests {
    /// Requests one after another (as `curl` in a loop sends them): each blocks its worker, then the
    /// worker waits a few ms for the next, too briefly for a scan to see it waiting. Each is one
    /// stall naming its request, none merged with the next.
    @Test("sequential requests with a short pause: one stall each, each naming its request")
    func sequential() async throws {
        let (watchdog, directory) = try await poolJobWatchdog(threshold: .milliseconds(100))
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let count = 10
        for i in 0..<count {
            _ = await Task.detached { await backToBackFixtureServe(route: "/seq/\(i)", milliseconds: 250) }.value
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Task.sleep(for: .milliseconds(500))
        watchdog.stop()
        let (reports, summary) = finalPoolJobStalls(in: directory)
        #expect(reports.count == count, "\(summary)")
        #expect(Set(reports.compactMap { $0.request?.route }).count == reports.count, "\(summary)")
        #expect(reports.allSatisfy { $0.durationNanoseconds < 400_000_000 }, "\(summary)")
    }
}
