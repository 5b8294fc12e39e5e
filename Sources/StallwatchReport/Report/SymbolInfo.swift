/// What the symbolizer knows about an address; every field is optional because reports keep
/// raw addresses and can be symbolized later.
public struct SymbolInfo: Sendable, Equatable, Codable {
    /// Path or soname of the module containing the address.
    public var module: String?
    /// Offset of the address inside the module (what `addr2line -e module` wants).
    public var moduleOffset: ReportAddress?
    /// The module's GNU build id, hex.
    public var buildID: String?
    /// The demangled function name.
    public var symbol: String?
    /// `true` when the address is in a Swift async function (a frame read from the task's async
    /// context chain, or the async function running on the thread); `nil` otherwise.
    public var isAsync: Bool?

    /// Creates symbol information.
    public init(module: String? = nil, moduleOffset: UInt64? = nil, buildID: String? = nil, symbol: String? = nil) {
        self.module = module
        self.moduleOffset = moduleOffset.map(ReportAddress.init)
        self.buildID = buildID
        self.symbol = symbol
    }

    /// Nothing known.
    public static let unknown = SymbolInfo()
}
