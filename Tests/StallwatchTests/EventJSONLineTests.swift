import Foundation
import Testing
@testable import Stallwatch

@Suite("An event's JSON line")
struct EventJSONLineTests {
    @Test("parses back to the summary, keys sorted, awkward characters escaped")
    func roundTrips() throws {
        let message = "a \"quoted\" path\\to\nfile\t\u{1}é /x"
        let event = WatchdogEvent.error(message)
        let line = event.jsonLine
        let parsed = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], "\(line)")
        #expect(parsed == event.summary)
        #expect(parsed["message"] == message)
        #expect(!line.contains("\n"))
        let ended = WatchdogEvent.stallEnded(loop: "nio-loop-0", thread: ThreadID(rawValue: 7), duration: .milliseconds(1500))
        #expect(ended.jsonLine == #"{"durationMs":"1500","event":"stallEnded","loop":"nio-loop-0","thread":"7"}"#)
    }
}
