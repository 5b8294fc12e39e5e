import ArgumentParser
import Foundation
import Stallwatch
import StallwatchPolicy
import StallwatchReport
import StallwatchExport

/// `stallwatch list`: a report directory at a glance, one line per distinct stall.
struct List: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Summarize a report directory: one line per distinct stall (cause and blamed stack), most total time first."
    )

    @Argument(help: "The report directory.")
    var directory: String

    func run() throws {
        var info = stat()
        guard stat(directory, &info) == 0 else {
            throw CommandError("cannot read \(directory): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw CommandError("\(directory) is not a directory") }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw CommandError("cannot list \(directory): \((error as NSError).localizedDescription)")
        }
        var inputs: [StallListing.Input] = []
        var unreadable = 0
        for name in names.sorted() where name.hasSuffix(".json") && !name.hasPrefix(".") {
            let path = (directory as NSString).appendingPathComponent(name)
            // One damaged file must not hide the rest: count it and go on.
            guard let report = try? ReportInputs.load(path) else { unreadable += 1; continue }
            inputs.append(StallListing.Input(report: report, path: path))
        }
        let listing = StallListing(inputs)
        print(Self.render(listing))
        if unreadable > 0 { print("(\(unreadable) file\(unreadable == 1 ? "" : "s") not readable as reports; `stallwatch show FILE` says why)") }
    }

    static func render(_ listing: StallListing) -> String {
        guard !listing.entries.isEmpty else { return "no stall reports" }
        var lines = ["    total  longest  count  cause           last seen (UTC)           blamed  [loops]  newest file"]
        for e in listing.entries {
            let columns = [
                pad(seconds(e.totalNanoseconds), 9), pad(seconds(e.longestNanoseconds), 8), pad("\(e.count)", 6),
                "  " + e.cause.padding(toLength: 14, withPad: " ", startingAt: 0),
                TextFormat.time(unixNanoseconds: e.lastSeenUnixNanoseconds),
            ]
            let loops = e.loops.map(TerminalSafeText.escaped).joined(separator: ",")
            lines.append(columns.joined(separator: " ") + "  \(TerminalSafeText.escaped(e.summary))  [\(loops)]  \(TerminalSafeText.escaped(e.newestPath))")
        }
        return lines.joined(separator: "\n")
    }

    private static func seconds(_ nanoseconds: Int64) -> String { String(format: "%.2f s", Double(nanoseconds) / 1e9) }
    private static func pad(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
