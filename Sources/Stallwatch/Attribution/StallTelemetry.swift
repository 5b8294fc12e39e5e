import StallwatchReport

/// The facts of one stall as telemetry names them: the same values for its log records (as
/// swift-log metadata) and for its span and span events (as span attributes), under OpenTelemetry's
/// semantic-convention names where one exists (`thread.*`, `code.*`, `http.*`) and `stallwatch.*`
/// for the rest.
struct StallTelemetry: Sendable {
    /// `stallwatch.stall` when a stall is reported, `stallwatch.stall.ended` when it is over.
    var eventName: String
    var reportID: String
    var loop: String
    var cause: String
    var durationMilliseconds: Int64
    var final: Bool
    var threadID: Int32?
    var threadName: String?
    /// The leaf of the blamed path among the service's frames (what `blamed` starts with).
    var function: String?
    /// The module (executable or shared library) holding ``function``: reports carry no source
    /// file, and this is where the code is.
    var module: String?
    /// Up to three of the service's frames, leaf first, joined by ` ← `.
    var blamed: String
    /// What took the samples (`timer-signal`, `perf-event`), when the loop was sampled.
    var driver: String?
    /// Whether some samples' walks ended before the thread's first frame (their roots are missing).
    var truncated: Bool
    var method: String?
    var route: String?

    static let stallEvent = "stallwatch.stall"
    static let endedEvent = "stallwatch.stall.ended"

    /// The facts of `report`; `ended` for the record that says the stall is over.
    init(_ report: StallReport, ended: Bool = false) {
        eventName = ended ? Self.endedEvent : Self.stallEvent
        reportID = report.id
        loop = report.loopName ?? report.thread?.name ?? "?"
        cause = report.cause?.kind.rawValue ?? "unknown"
        durationMilliseconds = report.durationNanoseconds / 1_000_000
        final = report.durationIsFinal
        threadID = report.thread?.id
        threadName = report.thread?.name
        let frames = report.blamedSummary(frames: 3).split(separator: " <- ").map(String.init)
        function = frames.first
        module = frames.first.flatMap { leaf in report.blamedStack.first { $0.symbol == leaf }?.module }
        blamed = frames.joined(separator: " ← ")
        driver = report.sampling?.driver
        truncated = report.truncatedSampleCount > 0
        method = report.request?.method
        route = report.request?.route
    }

    /// One line a person reads in a log view: `nio-loop-2 stalled 1.42 s, cpuBound, in
    /// PKCS5_PBKDF2_HMAC ← hashPassword ← login` (`... stall ended after 1.42 s, ...` at its end).
    /// Functions by their short names (``shortName(_:)``); the attributes keep the full ones.
    var body: String {
        let seconds = Self.seconds(milliseconds: durationMilliseconds)
        var line = eventName == Self.endedEvent ? "\(loop) stall ended after \(seconds) s, \(cause)"
                                                : "\(loop) stalled \(seconds) s, \(cause)"
        var names: [String] = []
        for frame in blamed.split(separator: " ← ") {
            let name = Self.shortName(String(frame))
            if names.last != name { names.append(name) }
        }
        if !names.isEmpty { line += ", in " + names.joined(separator: " ← ") }
        return line
    }

    /// A demangled name as a person says it: `App.Auth.hashPassword(_: Swift.String) -> ()` is
    /// `hashPassword`; a closure is `closure in` the function it is written in; a C name stays.
    static func shortName(_ symbol: String) -> String {
        var name = Substring(symbol)
        for prefix in ["partial apply forwarder for ", "merged ", "reabstraction thunk helper from ", "static "] where name.hasPrefix(prefix) {
            name = name.dropFirst(prefix.count)
        }
        let isClosure = name.hasPrefix("closure #") || name.hasPrefix("implicit closure #")
        // A closure's name ends with the function that holds it, after its last " in ".
        if isClosure, let last = name.ranges(of: " in ").last { name = name[last.upperBound...] }
        if name.hasPrefix("("), let close = name.range(of: "):") { name = name[close.upperBound...] }   // (extension in M):
        // The signature goes, then generic arguments, then `static ` and the module and type qualifiers.
        if let cut = name.firstIndex(of: "(") { name = name[..<cut] }
        var plain = ""
        var depth = 0
        for c in name {
            if c == "<" { depth += 1 } else if c == ">" { depth = max(depth - 1, 0) } else if depth == 0 { plain.append(c) }
        }
        var short = Substring(plain)
        if let space = short.lastIndex(of: " ") { short = short[short.index(after: space)...] }
        if let dot = short.lastIndex(of: "."), short.index(after: dot) < short.endIndex { short = short[short.index(after: dot)...] }
        let said = short.isEmpty ? symbol : String(short)
        return isClosure ? "closure in \(said)" : said
    }

    /// `1420` → `1.42`: two decimals, without Foundation's formatters.
    static func seconds(milliseconds: Int64) -> String {
        let hundredths = (max(milliseconds, 0) + 5) / 10
        let fraction = hundredths % 100
        return "\(hundredths / 100)." + (fraction < 10 ? "0" : "") + "\(fraction)"
    }

    /// The facts as string pairs, in a fixed order (log metadata; spans take the same keys).
    var attributes: [(key: String, value: String)] {
        var pairs: [(key: String, value: String)] = [
            ("event.name", eventName),
            ("stallwatch.report_id", reportID),
            ("stallwatch.loop", loop),
            ("stallwatch.cause", cause),
            ("stallwatch.duration_ms", "\(durationMilliseconds)"),
            ("stallwatch.final", "\(final)"),
            ("stallwatch.truncated", "\(truncated)"),
        ]
        if let threadID { pairs.append(("thread.id", "\(threadID)")) }
        if let threadName { pairs.append(("thread.name", threadName)) }
        if let function { pairs.append(("code.function.name", function)) }
        if let module { pairs.append(("code.file.path", module)) }
        if !blamed.isEmpty { pairs.append(("stallwatch.blamed", blamed)) }
        if let driver { pairs.append(("stallwatch.driver", driver)) }
        if let method { pairs.append(("http.request.method", method)) }
        if let route { pairs.append(("http.route", route)) }
        return pairs
    }
}
