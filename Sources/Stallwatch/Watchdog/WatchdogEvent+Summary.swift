import Foundation
import StallwatchPolicy
import StallwatchReport

extension WatchdogEvent {
    /// The event in a few flat fields, for one log line or a metrics label set: `event`, and per
    /// kind `loop`, `cause`, `evidence`, `durationMs`, `thread`, `id`, `blamed` (three frames of the
    /// service's own code from the blamed stack, leaf first, joined by ` <- `: SwiftNIO, Vapor,
    /// Hummingbird and runtime frames passed over, see `StallReport.blamedSummary(frames:)`),
    /// `reason` or `message`; for a stall that served a request registered with ``StallAttribution``,
    /// also `request` (method and route), `traceID` and `spanID`.
    public var summary: [String: String] {
        if kind == .feedbackLoop, let report {
            return [
                "event": report.kind.rawValue, "id": report.id, "loop": report.loopName ?? "",
                "key": report.feedback?.key ?? "", "count": "\(report.feedback?.count ?? 0)",
                "durationMs": "\(report.durationNanoseconds / 1_000_000)",
                "blamed": report.blamedSummary(frames: 3),
            ]
        }
        if let report {
            return [
                "event": report.kind.rawValue, "id": report.id, "loop": report.loopName ?? "",
                "cause": report.cause?.kind.rawValue ?? "", "evidence": report.cause?.evidence ?? "",
                "thread": report.thread.map { "\($0.id) \($0.name)" } ?? "",
                "durationMs": "\(report.durationNanoseconds / 1_000_000)",
                "blamed": report.blamedSummary(frames: 3),
            ].merging(Self.requestFields(report.request)) { a, _ in a }
        }
        var fields = ["event": kind.name]
        if let loop { fields["loop"] = loop }
        if let thread { fields["thread"] = "\(thread.rawValue)" }
        if let duration { fields["durationMs"] = "\(duration.clampedNanoseconds / 1_000_000)" }
        if let filterReason { fields["reason"] = "\(filterReason)" }
        if let message { fields["message"] = message }
        return fields
    }

    private static func requestFields(_ request: ReportRequest?) -> [String: String] {
        guard let request else { return [:] }
        var fields = ["request": "\(request.method) \(request.route)"]
        if let t = request.traceID { fields["traceID"] = t }
        if let s = request.spanID { fields["spanID"] = s }
        return fields
    }

    /// ``summary`` as one line of JSON with sorted keys.
    ///
    /// Written by hand: JSONSerialization's sorted keys compare through a locale, which maps ICU in
    /// (2.3 MiB of code pages resident at the first event, measured with `bench memory` in the
    /// Vapor example). The keys are ASCII, so their byte order is the same order.
    public var jsonLine: String {
        let fields = summary
        var line = "{"
        for (i, key) in fields.keys.sorted().enumerated() {
            if i > 0 { line += "," }
            line += Self.jsonString(key) + ":" + Self.jsonString(fields[key] ?? "")
        }
        return line + "}"
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped.
    private static func jsonString(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
