import ArgumentParser
import Stallwatch

/// `stallwatch pprof`: reports as one pprof profile, for `go tool pprof`, Pyroscope and Parca.
struct Pprof: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write reports' samples as a pprof profile (gzipped profile.proto).",
        discussion: "Each sample is labelled with its stall (stall_id, loop, thread, thread_id, cause, stall_duration; http.route, http.method, trace_id, span_id when it served a named request). Read it with `go tool pprof -top FILE`, or send it to Pyroscope or Parca (see the README)."
    )

    @Argument(help: "Report files written by the watchdog.")
    var files: [String]

    @Option(name: .shortAndLong, help: "Write the profile here instead of standard output.")
    var output: String?

    func run() throws {
        let reports = try ReportInputs.loadAll(files)
        try CommandOutput.write(try PprofFile.bytes(of: reports), to: output, binary: true)
    }
}
