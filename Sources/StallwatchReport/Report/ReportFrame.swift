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
    /// The application's code or the system's, from the module (absent in files written before
    /// it was recorded: ``resolvedOrigin`` derives it then).
    public var origin: FrameOrigin?
    /// `true` for a frame of a Swift async function: its callers once it resumed after an `await`
    /// are read from the task's chain of async contexts, not from the machine stack; its
    /// ``symbol`` is the async function's own name. Absent otherwise.
    public var isAsync: Bool?

    /// Creates a frame from an address, what is known about it, and its sample count.
    public init(address: UInt64, info: SymbolInfo = .unknown, sampleCount: Int) {
        self.address = ReportAddress(address)
        self.module = info.module
        self.moduleOffset = info.moduleOffset
        self.buildID = info.buildID
        self.symbol = info.symbol
        self.sampleCount = sampleCount
        self.origin = FrameOrigin(module: info.module)
        self.isAsync = info.isAsync
    }

    /// ``origin``, or derived from the module for files that do not record it.
    public var resolvedOrigin: FrameOrigin { origin ?? FrameOrigin(module: module) }

}
