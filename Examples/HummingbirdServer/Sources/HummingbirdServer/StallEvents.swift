import Foundation
import Stallwatch

/// What a service does with the watchdog's events beyond the log and the metrics: here, a line on
/// standard error per stall and per error. New kinds of event may come in any release: switch over
/// `event.kind` and keep a `default:` branch.
func followStallEvents(of watchdog: Watchdog) async {
    for await event in watchdog.events {
        switch event.kind {
        case .stall:
            if let report = event.report {
                FileHandle.standardError.write(Data("stall in \(report.blamedSummary(frames: 3))\n".utf8))
            }
        case .error:
            FileHandle.standardError.write(Data("stallwatch: \(event.message ?? "")\n".utf8))
        default:
            break
        }
    }
}
