import StallwatchReport

// A call tree becomes the report's flat nodes and blamed stack here, where the tree is known: the
// report model does not depend on the policy that builds it.
extension ReportCallTreeNode {
    /// Converts a policy call tree into flat nodes, symbolizing each function once per node.
    /// Iterative, so depth is bounded only by memory.
    package static func flatten(_ tree: CallTree, describe: (FrameKey) -> SymbolInfo) -> [ReportCallTreeNode] {
        var out: [ReportCallTreeNode] = []
        // Reversed so that popping visits siblings heaviest first.
        var pending: [(node: CallTree.Node, parent: Int)] = tree.roots.reversed().map { ($0, -1) }
        while let (node, parent) = pending.popLast() {
            let info = describe(node.frame)
            out.append(ReportCallTreeNode(parent: parent, address: node.frame.address, symbol: info.symbol,
                                          module: info.module, count: node.count, selfCount: node.selfCount))
            let index = out.count - 1
            pending.append(contentsOf: node.children.reversed().map { ($0, index) })
        }
        return out
    }
}

extension ReportFrame {
    /// The blamed stack of a call tree, leaf first (like a backtrace), with per-frame counts.
    package static func blamedStack(of tree: CallTree, describe: (FrameKey) -> SymbolInfo) -> [ReportFrame] {
        tree.heaviestPath().reversed().map {
            ReportFrame(address: $0.frame.address, info: describe($0.frame), sampleCount: $0.count)
        }
    }
}
