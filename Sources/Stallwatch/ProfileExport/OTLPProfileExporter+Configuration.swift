import Foundation

extension OTLPProfileExporter {
    /// Where and how profiles are sent, and how much the exporter may hold while they cannot be.
    ///
    /// Read from the standard OpenTelemetry variables with ``fromEnvironment(_:)``, the way
    /// swift-otel reads them for its own exporters, or set in code and checked by ``validated()``.
    public struct Configuration: Sendable, Equatable {
        /// How request bodies are compressed.
        public struct Compression: Sendable, Hashable, CustomStringConvertible {
            /// The value's name in `OTEL_EXPORTER_OTLP_COMPRESSION`.
            public let name: String
            private init(_ name: String) { self.name = name }
            /// Bodies as they are.
            public static let none = Compression("none")
            /// Bodies gzip-compressed (`Content-Encoding: gzip`).
            public static let gzip = Compression("gzip")
            public var description: String { name }
        }

        /// The URL profiles are posted to, whole (`http://collector:4318/v1development/profiles`).
        public var endpoint: String
        /// Extra request headers (an API key, a tenant), sent with every request.
        public var headers: [String: String] = [:]
        /// How long one request may take, connection included. Default 10 s, as OTLP's.
        public var timeout: Duration = .seconds(10)
        /// Default ``Compression/none``, as OTLP's.
        public var compression: Compression = .none
        /// The profiles' resource: `service.name` and the rest of `OTEL_RESOURCE_ATTRIBUTES`.
        public var resourceAttributes: [String: String] = ["service.name": "unknown_service"]
        /// How long the exporter waits after a stall's profile for more to send in the same request.
        public var batchDelay: Duration = .seconds(1)
        /// The most one request may carry, encoded (before compression). A stall whose profile is
        /// larger goes without its original payload (the report's JSON), and says so in its
        /// `stallwatch.cut` attribute; one larger still is not sent, and an error event says so.
        public var maxRequestBytes: Int = 4 << 20
        /// The most the exporter holds, encoded, while the receiver is down or slow: past it the
        /// oldest profiles are dropped, counted, and an error event says how many.
        public var maxQueuedBytes: Int = 16 << 20
        /// Tries per request before its profiles are dropped (an error event says so).
        public var maxAttempts: Int = 5
        /// The longest wait between two tries (a longer `Retry-After` is cut to it).
        public var maxRetryDelay: Duration = .seconds(30)

        /// Profiles posted to `endpoint`, with the other settings at their defaults.
        public init(endpoint: String) { self.endpoint = endpoint }

        /// The path a base endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`) gets for profiles.
        public static let profilesPath = "v1development/profiles"

        /// The configuration the standard variables give, or `nil` when neither
        /// `OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT` nor `OTEL_EXPORTER_OTLP_ENDPOINT` is set (or
        /// `OTEL_SDK_DISABLED` is `true`). Each `…_PROFILES_…` variable wins over its general
        /// one: `ENDPOINT` (the profiles one as is; the general one with ``profilesPath`` added),
        /// `HEADERS` (`k=v,k2=v2`, values percent-decoded), `TIMEOUT` (ms), `COMPRESSION`
        /// (`gzip`, `none`), `PROTOCOL` (`http/protobuf` only); `OTEL_SERVICE_NAME` and
        /// `OTEL_RESOURCE_ATTRIBUTES` for the resource.
        /// - Throws: a malformed value, named with its variable.
        public static func fromEnvironment(_ environment: [String: String]) throws(OTLPExporterError) -> Configuration? {
            if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" { return nil }
            func value(_ suffix: String) -> (name: String, value: String)? {
                for name in ["OTEL_EXPORTER_OTLP_PROFILES_\(suffix)", "OTEL_EXPORTER_OTLP_\(suffix)"] {
                    if let v = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !v.isEmpty { return (name, v) }
                }
                return nil
            }
            let endpoint: String
            if let v = environment["OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT"]?.trimmingCharacters(in: .whitespacesAndNewlines), !v.isEmpty {
                endpoint = v
            } else if let v = environment["OTEL_EXPORTER_OTLP_ENDPOINT"]?.trimmingCharacters(in: .whitespacesAndNewlines), !v.isEmpty {
                try OTLPSettingParser.checkURL(v, variable: "OTEL_EXPORTER_OTLP_ENDPOINT")
                endpoint = (v.hasSuffix("/") ? v : v + "/") + profilesPath
            } else {
                return nil
            }
            var c = Configuration(endpoint: endpoint)
            try OTLPSettingParser.checkURL(endpoint, variable: "OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT")
            if let p = value("PROTOCOL") { try OTLPSettingParser.checkProtocol(p.value, variable: p.name) }
            if let h = value("HEADERS") { c.headers = try OTLPSettingParser.pairs(h.value, variable: h.name) }
            if let t = value("TIMEOUT") { c.timeout = try OTLPSettingParser.milliseconds(t.value, variable: t.name) }
            if let z = value("COMPRESSION") {
                switch z.value.lowercased() {
                case "gzip": c.compression = .gzip
                case "none": c.compression = .none
                default: throw OTLPExporterError("\(z.name)=\(z.value): compression must be gzip or none")
                }
            }
            if let r = environment["OTEL_RESOURCE_ATTRIBUTES"]?.trimmingCharacters(in: .whitespacesAndNewlines), !r.isEmpty {
                c.resourceAttributes.merge(try OTLPSettingParser.pairs(r, variable: "OTEL_RESOURCE_ATTRIBUTES")) { $1 }
            }
            if let name = environment["OTEL_SERVICE_NAME"]?.trimmingCharacters(in: .whitespacesAndNewlines), !name.isEmpty {
                c.resourceAttributes["service.name"] = name
            }
            return try c.validated()
        }

        /// This configuration, if every value is usable.
        /// - Throws: the first value that is not, named.
        public func validated() throws(OTLPExporterError) -> Configuration {
            try OTLPSettingParser.checkURL(endpoint, variable: "endpoint")
            for (name, value) in headers {
                guard OTLPSettingParser.isToken(name) else {
                    throw OTLPExporterError("header name \"\(name)\" is not an HTTP token")
                }
                guard !value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                    throw OTLPExporterError("header \(name): its value holds a line break")
                }
            }
            guard timeout > .zero else { throw OTLPExporterError("timeout must be more than 0, not \(timeout)") }
            guard batchDelay >= .zero else { throw OTLPExporterError("batchDelay must not be negative") }
            guard maxRequestBytes >= 1024 else {
                throw OTLPExporterError("maxRequestBytes must be at least 1024, not \(maxRequestBytes)")
            }
            guard maxQueuedBytes >= maxRequestBytes else {
                throw OTLPExporterError("maxQueuedBytes (\(maxQueuedBytes)) must be at least maxRequestBytes (\(maxRequestBytes))")
            }
            guard maxAttempts >= 1 else { throw OTLPExporterError("maxAttempts must be at least 1, not \(maxAttempts)") }
            guard maxRetryDelay > .zero else { throw OTLPExporterError("maxRetryDelay must be more than 0") }
            return self
        }
    }
}

/// The grammar of the `OTEL_EXPORTER_OTLP_*` values: pure, each failure a sentence naming the variable.
enum OTLPSettingParser {
    /// An `http` or `https` URL with a host and, if any, a port in 1...65535.
    static func checkURL(_ url: String, variable: String) throws(OTLPExporterError) {
        let lower = url.lowercased()
        guard let schemeEnd = lower.range(of: "://"), ["http", "https"].contains(lower[..<schemeEnd.lowerBound]) else {
            throw OTLPExporterError("\(variable)=\(url): not an http:// or https:// URL")
        }
        guard !url.unicodeScalars.contains(where: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }) else {
            throw OTLPExporterError("\(variable)=\(url): a URL holds no white space")
        }
        let rest = url[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? authority
        var host = Substring(hostPort), port: Substring?
        if hostPort.hasPrefix("[") {   // [::1]:4318
            guard let close = hostPort.firstIndex(of: "]") else {
                throw OTLPExporterError("\(variable)=\(url): an IPv6 address without its closing ]")
            }
            host = hostPort[...close]
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") { port = after.dropFirst() } else if !after.isEmpty {
                throw OTLPExporterError("\(variable)=\(url): \"\(after)\" after the host")
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = hostPort[..<colon]
            port = hostPort[hostPort.index(after: colon)...]
        }
        guard !host.isEmpty else { throw OTLPExporterError("\(variable)=\(url): no host") }
        if let port {
            guard let n = Int(port), (1...65535).contains(n) else {
                throw OTLPExporterError("\(variable)=\(url): port \"\(port)\" is not a number in 1...65535")
            }
        }
    }

    static func checkProtocol(_ value: String, variable: String) throws(OTLPExporterError) {
        switch value.lowercased() {
        case "http/protobuf": return
        case "grpc", "http/json":
            throw OTLPExporterError("\(variable)=\(value): profiles are sent as http/protobuf only")
        default:
            throw OTLPExporterError("\(variable)=\(value): not an OTLP protocol (grpc, http/protobuf, http/json)")
        }
    }

    /// `k=v,k2=v2`, keys and values trimmed, values percent-decoded.
    static func pairs(_ list: String, variable: String) throws(OTLPExporterError) -> [String: String] {
        var out: [String: String] = [:]
        for item in list.split(separator: ",") {
            let text = String(item).trimmingCharacters(in: .whitespacesAndNewlines)
            if text.isEmpty { continue }
            guard let eq = text.firstIndex(of: "=") else {
                throw OTLPExporterError("\(variable): \"\(text)\" is not key=value")
            }
            let key = String(text[..<eq]).trimmingCharacters(in: .whitespacesAndNewlines)
            guard !key.isEmpty else { throw OTLPExporterError("\(variable): \"\(text)\" has no key") }
            guard let value = percentDecoded(String(text[text.index(after: eq)...]).trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw OTLPExporterError("\(variable): the value of \(key) has a malformed %-escape")
            }
            out[key] = value
        }
        return out
    }

    /// A whole number of milliseconds, at least 1.
    static func milliseconds(_ value: String, variable: String) throws(OTLPExporterError) -> Duration {
        guard let ms = Int64(value), ms > 0 else {
            throw OTLPExporterError("\(variable)=\(value): not a whole number of milliseconds above 0")
        }
        return .milliseconds(ms)
    }

    /// RFC 9110's token: what a header name may be.
    static func isToken(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || "!#$%&'*+-.^_`|~".utf8.contains(c)
        }
    }

    static func percentDecoded(_ s: String) -> String? {
        var bytes: [UInt8] = []
        var it = Array(s.utf8)[...]
        while let c = it.popFirst() {
            guard c == UInt8(ascii: "%") else { bytes.append(c); continue }
            guard it.count >= 2, let v = UInt8(String(decoding: it.prefix(2), as: UTF8.self), radix: 16) else { return nil }
            bytes.append(v)
            it = it.dropFirst(2)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
