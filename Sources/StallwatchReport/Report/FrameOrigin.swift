/// Whether a frame is the application's own code or the system's (libc, the loader, the Swift
/// runtime and toolchain libraries, the vDSO), the way crash reporters mark in-app frames. Told by
/// the module's path alone, so it also works on reports symbolized elsewhere. Stored in reports as
/// `"application"` or `"system"`. A struct with static members, not an enum, so that an origin
/// can be added without breaking a consumer's `switch`.
public struct FrameOrigin: RawRepresentable, Hashable, Sendable, Codable, CaseIterable, CustomStringConvertible {
    /// The stable name, as stored in reports.
    public let rawValue: String
    /// An origin from its name; names unknown to this version are kept as they are.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The service's own code (its executable and the libraries it ships), or an unknown module.
    public static let application = FrameOrigin(rawValue: "application")
    /// libc, the loader, the Swift runtime and toolchain libraries, the vDSO.
    public static let system = FrameOrigin(rawValue: "system")
    /// Every origin this version knows.
    public static let allCases: [FrameOrigin] = [.application, .system]

    public var description: String { rawValue }

    /// The origin of a frame in `module`.
    public init(module: String?) {
        self = Self.isSystem(module: module) ? .system : .application
    }

    private static let systemPrefixes = ["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/"]
    private static let systemLibraries = ["libswiftCore.so", "libswift_Concurrency.so", "libdispatch.so",
                                          "libFoundation.so", "libFoundationEssentials.so", "libBlocksRuntime.so",
                                          "libswiftGlibc.so", "libswiftDispatch.so", "libswiftSynchronization.so"]

    /// `true` for frames of system modules; `false` for the application's (and for frames whose
    /// module is unknown: better to show an unknown frame than to skip past the culprit).
    public static func isSystem(module: String?) -> Bool {
        guard let module else { return false }
        if module.hasPrefix("linux-vdso") || module.hasPrefix("linux-gate") { return true }
        if systemPrefixes.contains(where: module.hasPrefix) { return true }
        // Compared in place: every frame of every report asks, and splitting the path or
        // the standard library's substring search allocate.
        let utf8 = module.utf8
        let file = utf8.lastIndex(of: UInt8(ascii: "/")).map { module[utf8.index(after: $0)...] } ?? module[...]
        return systemLibraries.contains { $0.utf8.elementsEqual(file.utf8) } || contains(module, "/usr/lib/swift/")
    }

    /// Whether `text` contains `part`, byte for byte, without allocating.
    private static func contains(_ text: String, _ part: String) -> Bool {
        let hay = text.utf8
        var at = hay.startIndex
        while at != hay.endIndex {
            if hay[at...].starts(with: part.utf8) { return true }
            hay.formIndex(after: &at)
        }
        return false
    }
}

extension StallReport {
    /// The first frames of the blamed stack starting at the service's own code: what a person
    /// needs in a one-line summary (a stall in `usleep` reads `myHandler <- …`, not `clock_nanosleep`;
    /// a bcrypt hash in a Vapor route starts at the route's closure, not at Vapor's bcrypt frames).
    /// Frames of the frameworks and the runtime (SwiftNIO, Vapor, Hummingbird, the Swift runtime,
    /// libc, libdispatch) are passed over, told by the Swift module in their names, since a
    /// service's packages are linked into its executable; from there, only the service's frames are
    /// listed. Without any, as before: from the first named frame outside the system's modules,
    /// else from the leaf, every frame.
    public func blamedSummary(frames count: Int = 3) -> String {
        // Lazily, and a lone name returned as it is: the watchdog asks for one frame on every
        // stall, and the filtered and mapped lists and their join allocated each time.
        if let start = ServiceFrames.firstServiceFrame(in: blamedStack) {
            // The service's frames only: the framework calling its handler is noise in one line.
            return Self.summary(blamedStack.dropFirst(start).lazy.filter { ServiceFrames.kind(of: $0) == .service }
                                    .compactMap { $0.symbol }, count: count)
        }
        let start = blamedStack.firstIndex { $0.resolvedOrigin == .application && $0.symbol != nil } ?? 0
        return Self.summary(blamedStack.dropFirst(start).lazy.map { $0.symbol ?? $0.address.description }, count: count)
    }

    /// The first `count` of `names` joined by ` <- `.
    private static func summary(_ names: some Sequence<String>, count: Int) -> String {
        var summary = ""
        for (i, name) in names.prefix(count).enumerated() {
            if i == 0 {
                summary = name
            } else {
                summary += " <- "
                summary += name
            }
        }
        return summary
    }
}
