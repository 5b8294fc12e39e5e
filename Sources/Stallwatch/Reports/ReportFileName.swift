/// The store's file naming: `sw-<16-digit Unix ms>-<kind>-<id>.json`, the write time in the name
/// for people and `ls`. Eviction and expiry go by the file's own modification time, which the
/// store sets when it writes (a name can lie: one dated in the future would never expire). Files
/// not matching the pattern, or not owned by this user, are never touched.
struct ReportFileName: Comparable {
    static let prefix = "sw-"
    static let suffix = ".json"
    static let temporaryPrefix = ".sw-tmp-"
    private static let timestampDigits = 16

    let name: String
    let unixMilliseconds: Int64

    init(unixMilliseconds: Int64, kind: String, id: String) {
        let digits = String(max(unixMilliseconds, 0))
        let padded = String(repeating: "0", count: max(0, Self.timestampDigits - digits.count)) + digits
        self.name = "\(Self.prefix)\(padded)-\(kind)-\(Self.sanitized(id))\(Self.suffix)"
        self.unixMilliseconds = unixMilliseconds
    }

    /// Parses a directory entry; `nil` for anything the store did not write.
    init?(parsing name: String) {
        guard name.hasPrefix(Self.prefix), name.hasSuffix(Self.suffix) else { return nil }
        let digits = name.dropFirst(Self.prefix.count).prefix(Self.timestampDigits)
        guard digits.count == Self.timestampDigits, digits.allSatisfy(\.isASCII), let value = Int64(digits) else {
            return nil
        }
        self.name = name
        self.unixMilliseconds = value
    }

    /// The report's pprof export beside it (`….pb.gz`), written when the configuration asks.
    var pprofCompanion: String { String(name.dropLast(Self.suffix.count)) + Self.pprofSuffix }

    static let pprofSuffix = ".pb.gz"

    /// The report a pprof companion belongs to, parsed from the companion's name.
    init?(parsingCompanion name: String) {
        guard name.hasSuffix(Self.pprofSuffix) else { return nil }
        self.init(parsing: String(name.dropLast(Self.pprofSuffix.count)) + Self.suffix)
    }

    static func < (lhs: ReportFileName, rhs: ReportFileName) -> Bool {
        (lhs.unixMilliseconds, lhs.name) < (rhs.unixMilliseconds, rhs.name)
    }

    /// Ids come from callers; keep file names portable and free of path separators.
    private static func sanitized(_ id: String) -> String {
        let allowed = id.unicodeScalars.prefix(64).map { scalar -> Character in
            let ok = scalar.isASCII && (("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
                || ("0"..."9").contains(scalar) || scalar == "-" || scalar == "_")
            return ok ? Character(scalar) : "_"
        }
        return allowed.isEmpty ? "report" : String(allowed)
    }
}
