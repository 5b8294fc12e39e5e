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
    public var jsonLine: String {
        let data = (try? JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}
