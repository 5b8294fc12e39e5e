/// A node of the sampled call tree in a report. The tree is stored flat (schema 2): an array in
/// depth-first order — every node after its parent, siblings heaviest first — each node naming its
/// parent by index. Nested objects would stop at JSON decoders' depth limits (Foundation's: 512
/// levels), losing any stall deeper than about 256 frames.
public struct ReportCallTreeNode: Sendable, Equatable, Codable {
    /// Index of the parent node in the report's `callTree`; -1 for a root.
    public var parent: Int
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
    /// The application's code or the system's, from the module (absent in files written before
    /// it was recorded: ``resolvedOrigin`` derives it then).
    public var origin: FrameOrigin?
    /// When each sample whose leaf this node is was taken, oldest first: nanoseconds after the
    /// stall's start (``StallReport/startTimeUnixNanoseconds``), one per ``selfCount``. `nil` when
    /// not known: a node that was no sample's leaf, a sample without a time, a file written before
    /// times were kept.
    public var sampleOffsetsNanoseconds: [Int64]?

    /// Creates a node.
    public init(parent: Int, address: UInt64, symbol: String? = nil, module: String? = nil, count: Int, selfCount: Int) {
        self.parent = parent
        self.address = ReportAddress(address)
        self.symbol = symbol
        self.module = module
        self.count = count
        self.selfCount = selfCount
        self.origin = FrameOrigin(module: module)
    }

    /// ``origin``, or derived from the module for files that do not record it.
    public var resolvedOrigin: FrameOrigin { origin ?? FrameOrigin(module: module) }

    /// Every root-to-node path that ends in samples, as (node indices root first, self count):
    /// what folded stacks and flame graphs are made of. A parent index that does not point to an
    /// earlier node ends the path there (a damaged file cannot make this loop).
    public static func leafPaths(_ nodes: [ReportCallTreeNode]) -> [(path: [Int], selfCount: Int)] {
        nodes.indices.compactMap { i in
            guard nodes[i].selfCount > 0 else { return nil }
            var path = [i]
            var current = i
            while nodes[current].parent >= 0 && nodes[current].parent < current {
                current = nodes[current].parent
                path.append(current)
            }
            return (path.reversed(), nodes[i].selfCount)
        }
    }
}

/// A call tree node as schema 1 wrote it: nested children instead of a parent index. Decoded
/// only, and flattened into ``ReportCallTreeNode``s.
struct NestedCallTreeNode: Decodable {
    var address: ReportAddress
    var symbol: String?
    var module: String?
    var count: Int
    var selfCount: Int
    var children: [NestedCallTreeNode]

    static func flatten(_ roots: [NestedCallTreeNode]) -> [ReportCallTreeNode] {
        var out: [ReportCallTreeNode] = []
        var pending: [(node: NestedCallTreeNode, parent: Int)] = roots.reversed().map { ($0, -1) }
        while let (node, parent) = pending.popLast() {
            out.append(ReportCallTreeNode(parent: parent, address: node.address.value, symbol: node.symbol,
                                          module: node.module, count: node.count, selfCount: node.selfCount))
            pending.append(contentsOf: node.children.reversed().map { ($0, out.count - 1) })
        }
        return out
    }
}
