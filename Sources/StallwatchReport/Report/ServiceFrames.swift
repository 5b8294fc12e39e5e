/// Which frames of a stack are the service's own code and which belong to the frameworks and the
/// runtime under it (SwiftNIO, Vapor, Hummingbird, the Swift runtime and standard library, libc,
/// libdispatch). On Linux a Swift service's packages are linked into its executable, so the module
/// path alone cannot tell a Vapor frame from a route handler's: the Swift module in the demangled
/// name does (`Vapor.BCryptDigest.hash(…)`, `closure #2 … in MyService.addRoutes(to:)`).
package enum ServiceFrames {
    /// What a frame is, for a summary that leads with the service's code.
    package enum Kind: Equatable, Sendable {
        /// The service's own code: its modules and every library not known to be a framework.
        case service
        /// A framework or runtime frame: a system module, or a known framework's Swift module or C symbol.
        case framework
        /// A compiler-made thunk naming no module (`reabstraction thunk helper …`): neither.
        case glue
        /// No symbol: only an address.
        case unnamed
    }

    /// Swift modules of the frameworks and runtime a service runs on (exact names).
    static let frameworkModules: Set<String> = [
        "Swift", "_Concurrency", "_StringProcessing", "Foundation", "FoundationEssentials",
        "FoundationInternationalization", "Dispatch", "Synchronization", "Glibc", "Musl", "Distributed",
        "Vapor", "RoutingKit", "ConsoleKit", "ConsoleKitTerminal", "ConsoleKitCommands", "AsyncKit",
        "MultipartKit", "WebSocketKit", "ServiceLifecycle", "UnixSignals", "Logging", "Metrics",
        "CoreMetrics", "Tracing", "Instrumentation", "ServiceContextModule", "AsyncHTTPClient",
        "AsyncAlgorithms", "Atomics", "HTTPTypes", "Crypto", "_CryptoExtras", "X509", "DequeModule",
        "Stallwatch", "StallwatchNIO", "StallwatchPolicy", "StallwatchReport", "StallwatchExport",
        // SwiftNIO's modules by name: a service's own module may well be called `NIOServer`.
        "NIO", "NIOCore", "NIOPosix", "NIOEmbedded", "NIOConcurrencyHelpers", "NIOFoundationCompat",
        "NIOHTTP1", "NIOHTTP2", "NIOHPACK", "NIOWebSocket", "NIOTLS", "NIOSSL", "NIOExtras",
        "NIOHTTPCompression", "NIOSOCKS", "NIOTransportServices", "NIOFileSystem", "NIOHTTPTypes",
        "NIOHTTPTypesHTTP1", "NIOHTTPTypesHTTP2", "NIOResumableUpload", "NIOCertificateReloading",
        // Hummingbird's, likewise (the example service is `HummingbirdServer`).
        "Hummingbird", "HummingbirdCore", "HummingbirdHTTP2", "HummingbirdTLS", "HummingbirdRouter",
        "HummingbirdTesting", "HummingbirdAuth", "HummingbirdBasicAuth", "HummingbirdBcrypt",
        "HummingbirdOTP", "HummingbirdCompression", "HummingbirdWebSocket", "HummingbirdWSCore",
        "HummingbirdWSClient", "HummingbirdWSCompression", "HummingbirdRedis", "HummingbirdFluent",
        "HummingbirdPostgres", "HummingbirdLambda", "HummingbirdAWSLambda", "OpenAPIHummingbird",
    ]
    /// Prefixes of framework module names: SwiftNIO's and Hummingbird's underscored ones.
    static let frameworkModulePrefixes = ["_NIO", "CNIO", "_Hummingbird"]
    /// Prefixes of C symbols the frameworks and the runtime link into the executable (the runtime,
    /// libdispatch and CoreFoundation too, with `-static-stdlib`).
    static let frameworkCPrefixes = ["c_nio_", "CNIO", "cnio", "vapor_", "Vapor_", "swift_", "_swift_", "__swift", "$s",
                                     "_dispatch_", "dispatch_", "_CF", "__CF"]

    /// The kind of `frame`.
    package static func kind(of frame: ReportFrame) -> Kind {
        guard let symbol = frame.symbol, !symbol.isEmpty else { return .unnamed }
        if frame.resolvedOrigin == .system { return .framework }
        // ELF's init and fini functions never run during a stall: a PC named after them lies in the
        // PLT stubs that follow `.init` (a call into a shared library, caught between caller and
        // callee), which the symbol table does not name. Not the service's code.
        if symbol == "_init" || symbol == "_fini" { return .glue }
        if isCIdentifier(symbol) {
            return frameworkCPrefixes.contains(where: symbol.hasPrefix) ? .framework : .service
        }
        guard let module = swiftModule(of: symbol) else { return .glue }
        return isFramework(module: module) ? .framework : .service
    }

    /// `true` for the Swift modules of the frameworks and the runtime.
    package static func isFramework(module: String) -> Bool {
        frameworkModules.contains(module) || frameworkModulePrefixes.contains(where: module.hasPrefix)
    }

    /// The index of the first frame of the service's own code in a leaf-first stack, or `nil`.
    package static func firstServiceFrame(in stack: [ReportFrame]) -> Int? {
        stack.firstIndex { kind(of: $0) == .service }
    }

    /// The Swift module that owns a demangled name: the entity after the last top-level ` in `
    /// (a closure's, or a conformance's), past words such as `static` or `generic specialization
    /// <…> of`, up to its first dot. `nil` when none is named (a thunk between function types).
    package static func swiftModule(of symbol: String) -> String? {
        // Walked by index, the word kept as a range: every stall's one-line summary asks this of
        // its frames, and a copy of the characters or a growing word would allocate.
        var depth = 0
        var start = symbol.startIndex
        var previous: Character?
        var i = symbol.startIndex
        // The owner is after the last " in " outside brackets (a closure's context, a witness's module).
        while i < symbol.endIndex {
            let c = symbol[i]
            switch c {
            case "(", "<", "[": depth += 1
            case ">" where previous == "-": break   // an arrow, not a bracket
            case ")", ">", "]": depth = max(0, depth - 1)
            case " " where depth == 0 && symbol[i...].starts(with: " in "):
                start = symbol.index(i, offsetBy: 4)
            default: break
            }
            previous = c
            i = symbol.index(after: i)
        }
        // The first identifier followed by a dot, outside brackets, from there.
        depth = 0
        var wordStart: String.Index?
        previous = start > symbol.startIndex ? symbol[symbol.index(before: start)] : nil
        i = start
        while i < symbol.endIndex {
            let c = symbol[i]
            switch c {
            case "(", "<", "[": depth += 1; wordStart = nil
            case ">" where previous == "-": wordStart = nil
            case ")", ">", "]": depth = max(0, depth - 1); wordStart = nil
            case ".":
                if depth == 0, let w = wordStart { return String(symbol[w..<i]) }
                wordStart = nil
            default:
                if depth == 0, c == "_" || c.isLetter || (c.isNumber && wordStart != nil) {
                    if wordStart == nil { wordStart = i }
                } else {
                    wordStart = nil
                }
            }
            previous = c
            i = symbol.index(after: i)
        }
        // "… in conformance X : P in Vapor": the text ends with the module's bare name.
        let rest = symbol[start...]
        if start > symbol.startIndex, !rest.isEmpty, rest.allSatisfy({ $0 == "_" || $0.isLetter || $0.isNumber }) { return String(rest) }
        return nil
    }

    private static func isCIdentifier(_ symbol: String) -> Bool {
        symbol.allSatisfy { $0 == "_" || $0 == "$" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
    }
}
