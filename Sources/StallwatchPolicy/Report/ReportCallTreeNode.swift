/// A node of the sampled call tree in a report, root first, children heaviest first.
public struct ReportCallTreeNode: Sendable, Equatable, Codable {
    /// The function key's address.
    public var address: ReportAddress
    /// Demangled symbol, if known.
    public var symbol: String?
    /// Module, if known.
    public var module: String?
    /// Samples through this node.
    public var count: Int
    /// Samples whose leaf was this node.
    public var selfCount: Int
    /// Callees.
    public var children: [ReportCallTreeNode]

    /// Creates a node.
    public init(address: UInt64, symbol: String? = nil, module: String? = nil, count: Int, selfCount: Int, children: [ReportCallTreeNode] = []) {
        self.address = ReportAddress(address)
        self.symbol = symbol
        self.module = module
        self.count = count
        self.selfCount = selfCount
        self.children = children
    }

    /// Converts a policy call tree, symbolizing each function once per node.
    public static func forest(of tree: CallTree, describe: (FrameKey) -> SymbolInfo) -> [ReportCallTreeNode] {
        tree.roots.map { convert($0, describe) }
    }

    private static func convert(_ node: CallTree.Node, _ describe: (FrameKey) -> SymbolInfo) -> ReportCallTreeNode {
        let info = describe(node.frame)
        return ReportCallTreeNode(
            address: node.frame.address, symbol: info.symbol, module: info.module,
            count: node.count, selfCount: node.selfCount,
            children: node.children.map { convert($0, describe) })
    }
}
