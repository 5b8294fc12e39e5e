import StallwatchReport

// A call tree becomes the report's flat nodes and blamed stack here, where the tree is known: the
// report model does not depend on the policy that builds it.
extension ReportCallTreeNode {
    /// The nodes of `tree` as a report lists them: depth first, every node after its parent,
    /// siblings heaviest first (then the most recently sampled). Each function is named from
    /// `frames`, resolved before: nothing is symbolized here. Iterative, so depth is bounded only
    /// by memory.
    package static func flatten(_ tree: inout CallTree, frames: FrameTable) -> [ReportCallTreeNode] {
        var out: [ReportCallTreeNode] = []
        out.reserveCapacity(tree.nodeCount)
        tree.preorder { node, parent in
            let info = frames.info(node.frame)
            out.append(ReportCallTreeNode(parent: parent, address: node.frame.address, symbol: info.symbol,
                                          module: info.module, count: node.count, selfCount: node.selfCount))
        }
        return out
    }
}

extension ReportFrame {
    /// The blamed stack of `tree`, leaf first (like a backtrace), with per-frame counts; each
    /// function named from `frames`.
    package static func blamedStack(of tree: CallTree, frames: FrameTable) -> [ReportFrame] {
        var depth = 0
        tree.forEachOnHeaviestPath { _, _ in
            depth += 1
            return true
        }
        var out: [ReportFrame] = []
        out.reserveCapacity(depth)
        tree.forEachOnHeaviestPath { frame, count in
            out.append(ReportFrame(address: frame.address, info: frames.info(frame), sampleCount: count))
            return true
        }
        out.reverse()
        return out
    }
}
