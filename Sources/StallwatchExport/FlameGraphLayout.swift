import StallwatchReport
/// The boxes of a flame graph: the stacks of a ``StallProfile`` merged by frame name from the root
/// down, each box spanning the samples under it. Positions are in samples, not pixels, so the
/// renderer (and the zoom script) scale them to any width.
package struct FlameGraphLayout: Sendable, Equatable {
    /// One box: a frame on one call path.
    package struct Box: Sendable, Equatable {
        /// The frame's name.
        package var name: String
        /// The application's code or the system's.
        package var origin: FrameOrigin
        /// 0 for roots, callees one above their caller.
        package var depth: Int
        /// First sample under the box (the samples of its left siblings come before it).
        package var start: Int
        /// Samples through the box.
        package var count: Int
    }

    /// Boxes in depth-first order (a caller before its callees).
    package var boxes: [Box]
    /// Samples in all stacks: the width of the whole graph.
    package var total: Int
    /// The deepest box's depth + 1.
    package var height: Int

    private final class Node {
        let name: String
        let origin: FrameOrigin
        var count = 0
        var children: [Node] = []
        var childIndex: [String: Int] = [:]

        init(name: String, origin: FrameOrigin) {
            self.name = name
            self.origin = origin
        }
    }

    /// Merges `profile`'s stacks. Siblings are ordered by name, as FlameGraph does, so the same
    /// stall always draws the same picture.
    package init(_ profile: StallProfile) {
        let root = Node(name: "", origin: .application)
        for stack in profile.stacks where stack.count > 0 {
            var node = root
            node.count += stack.count
            for index in stack.frames {
                let frame = profile.frames[index]
                let child: Node
                if let known = node.childIndex[frame.name] {
                    child = node.children[known]
                } else {
                    child = Node(name: frame.name, origin: frame.origin)
                    node.childIndex[frame.name] = node.children.count
                    node.children.append(child)
                }
                child.count += stack.count
                node = child
            }
        }
        var boxes: [Box] = []
        var height = 0
        // Iterative: a stall can be thousands of frames deep.
        var pending: [(node: Node, depth: Int, start: Int)] = []
        var start = 0
        for child in root.children.sorted(by: { $0.name < $1.name }) {
            pending.append((child, 0, start))
            start += child.count
        }
        pending.reverse()
        while let (node, depth, start) = pending.popLast() {
            boxes.append(Box(name: node.name, origin: node.origin, depth: depth, start: start, count: node.count))
            height = max(height, depth + 1)
            var childStart = start
            var children: [(Node, Int, Int)] = []
            for child in node.children.sorted(by: { $0.name < $1.name }) {
                children.append((child, depth + 1, childStart))
                childStart += child.count
            }
            pending.append(contentsOf: children.reversed())
        }
        self.boxes = boxes
        self.total = root.count
        self.height = height
    }
}
