import Foundation
import Stallwatch
import StallwatchPolicy
import StallwatchReport
import StallwatchExport

/// The report files named on a command line, read with one-line errors (no usage banner: a bad
/// file is not a usage mistake).
enum ReportInputs {
    static func load(_ path: String) throws(ReportReadError) -> StallReport {
        try ReportFileReader.read(path)
    }

    static func loadAll(_ paths: [String]) throws(ReportReadError) -> [StallReport] {
        var reports: [StallReport] = []
        for path in paths { reports.append(try load(path)) }
        return reports
    }
}

/// Writes a command's output to `-o FILE` or standard output.
enum CommandOutput {
    /// Writes `bytes`; binary output is refused on a terminal, where it would only garble the screen.
    static func write(_ bytes: [UInt8], to path: String?, binary: Bool) throws {
        if let path {
            do {
                try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                throw CommandError("cannot write \(path): \((error as NSError).localizedDescription)")
            }
            return
        }
        if binary, isatty(STDOUT_FILENO) != 0 {
            throw CommandError("the output is binary: redirect standard output to a file, or pass -o FILE")
        }
        FileHandle.standardOutput.write(Data(bytes))
    }
}

/// A failure reported in one line, with no usage banner.
struct CommandError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}
