/// One frame of a stack in a report.
public struct ReportFrame: Sendable, Equatable, Codable {
    /// The address (for blamed-path frames: the function key — its start, or the raw PC).
    public var address: ReportAddress
    /// Module path or soname.
    public var module: String?
    /// Offset inside the module.
    public var moduleOffset: ReportAddress?
    /// The module's GNU build id.
    public var buildID: String?
    /// Demangled symbol.
    public var symbol: String?
    /// Samples of the stall that passed through this frame on the blamed path (1 for a
    /// single-snapshot stack).
    public var sampleCount: Int

    /// Creates a frame from an address, what is known about it, and its sample count.
    public init(address: UInt64, info: SymbolInfo = .unknown, sampleCount: Int) {
        self.address = ReportAddress(address)
        self.module = info.module
        self.moduleOffset = info.moduleOffset
        self.buildID = info.buildID
        self.symbol = info.symbol
        self.sampleCount = sampleCount
    }

    /// The blamed stack of a call tree, leaf first (like a backtrace), with per-frame counts.
    public static func blamedStack(of tree: CallTree, describe: (FrameKey) -> SymbolInfo) -> [ReportFrame] {
        tree.heaviestPath().reversed().map {
            ReportFrame(address: $0.frame.address, info: describe($0.frame), sampleCount: $0.count)
        }
    }
}
