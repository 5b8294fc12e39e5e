import ArgumentParser
import Foundation
import StallwatchExport

/// `stallwatch otlp-profile`: reports as one OTLP profiles request, for a Collector or any backend
/// that takes OpenTelemetry's profiles signal (`POST /v1development/profiles`).
struct OTLPProfile: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "otlp-profile",
        abstract: "Write reports as one OTLP profiles request (ExportProfilesServiceRequest, profiles/v1development, protobuf).",
        discussion: "One profile per report: its samples by stack, the stall's facts as attributes, the request's trace as the samples' link, the report file as the original payload. Send it with `curl --data-binary @FILE -H 'Content-Type: application/x-protobuf' http://COLLECTOR:4318/v1development/profiles` (the Collector's profiles feature gate must be on)."
    )

    @Argument(help: "Report files written by the watchdog.")
    var files: [String]

    @Option(name: .shortAndLong, help: "Write the request here instead of standard output.")
    var output: String?

    func run() throws {
        var items: [OTLPProfileEncoder.Item] = []
        for path in files {
            let report = try ReportInputs.load(path)
            // The file as written is the original payload; unreadable now, the profile goes without.
            let json = FileManager.default.contents(atPath: path).map { Array($0) }
            items.append(.init(report: report, json: json))
        }
        try CommandOutput.write(OTLPProfileEncoder.encode(items), to: output, binary: true)
    }
}
