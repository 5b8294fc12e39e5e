import Glibc
import StallwatchPolicy
import StallwatchReport
import Testing
@testable import Stallwatch

@Suite("Report ids", .serialized)
struct ReportIDTests {
    @Test("31 watchdogs created one after another: every stall report has an id of its own")
    func uniqueAcrossWatchdogs() throws {
        var ids: [String] = []
        for _ in 0..<31 {
            let log = EventLog()
            let watchdog = try Watchdog(configuration: .watchingOwnLoops(threshold: .milliseconds(60)), metrics: nil) {
                log.append($0)
            }
            let probe = watchdog.makeProbe(name: "ids")
            try watchdog.start()
            stallOnce(probe, milliseconds: 200, log: log)
            watchdog.stop()
            ids += log.stalls.map(\.id)
        }
        #expect(ids.count >= 31, "\(ids.count) stall reports")
        #expect(Set(ids).count == ids.count, "\(ids)")
    }

    @Test("an id carries the pid and a token drawn at random per process, so a restart does not repeat it")
    func processToken() {
        let id = ReportIDs.next()
        let parts = id.split(separator: "-")
        #expect(parts.count == 3, "\(id)")
        #expect(parts.first.map(String.init) == "\(getpid())")
        #expect(parts.dropFirst().first.map { $0.count == 16 && $0.allSatisfy(\.isHexDigit) } == true, "\(id)")
        #expect(ReportIDs.next() != id)
    }
}
