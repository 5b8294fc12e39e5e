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

// The same from a reusable ``CallTreeStore``: what the watchdog builds its reports with (issue 19).
extension ReportCallTreeNode {
    /// ``flatten(_:describe:)`` of the tree `store` holds: the same nodes in the same order.
    package static func flatten(_ store: inout CallTreeStore, describe: (FrameKey) -> SymbolInfo) -> [ReportCallTreeNode] {
        var out: [ReportCallTreeNode] = []
        out.reserveCapacity(store.nodeCount)
        store.preorder { node, parent in
            let info = describe(node.frame)
            out.append(ReportCallTreeNode(parent: parent, address: node.frame.address, symbol: info.symbol,
                                          module: info.module, count: node.count, selfCount: node.selfCount))
        }
        return out
    }
}

extension ReportFrame {
    /// ``blamedStack(of:describe:)`` of the tree `store` holds: leaf first, with per-frame counts.
    package static func blamedStack(of store: CallTreeStore, describe: (FrameKey) -> SymbolInfo) -> [ReportFrame] {
        var depth = 0
        store.forEachOnHeaviestPath { _, _ in
            depth += 1
            return true
        }
        var out: [ReportFrame] = []
        out.reserveCapacity(depth)
        store.forEachOnHeaviestPath { frame, count in
            out.append(ReportFrame(address: frame.address, info: describe(frame), sampleCount: count))
            return true
        }
        out.reverse()
        return out
    }
}
