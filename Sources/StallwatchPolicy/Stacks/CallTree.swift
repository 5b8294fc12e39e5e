import StallwatchReport

/// Samples aggregated root→leaf by function: each node counts the samples whose stack passes
/// through that call path. This is what lets Stallwatch blame where the thread *spent* the
/// stall rather than where one late snapshot happened to land (matrix issue #622).
///
/// Stored flat, so that it is emptied and refilled without allocating once it has held a tree as
/// large: the watchdog rebuilds a stall's tree every round it has new samples. Nodes link to their
/// first child and next sibling by index; siblings are ordered heaviest first, then the most
/// recently sampled, when the tree is walked.
package struct CallTree: Sendable {
    /// One call path prefix.
    package struct Node: Sendable, Equatable {
        /// The function at this depth.
        package var frame: FrameKey
        /// Samples whose stack passes through this node.
        package var count = 0
        /// Samples whose stack ends exactly here (this function was the leaf).
        package var selfCount = 0
        /// Input index of the newest sample through this node; breaks ties.
        package var lastSampleIndex = 0
        fileprivate var parent: Int
        fileprivate var firstChild = -1
        fileprivate var nextSibling = -1
        fileprivate var visit = -1

        fileprivate init(frame: FrameKey, parent: Int) {
            self.frame = frame
            self.parent = parent
        }

        /// The order of siblings: heaviest first, then the most recently sampled.
        fileprivate func comesBefore(_ other: Node) -> Bool {
            count != other.count ? count > other.count : lastSampleIndex > other.lastSampleIndex
        }
    }

    /// A step of ``heaviestPath()``: a function and the samples that reached it on this path.
    package struct WeightedFrame: Sendable, Equatable, Hashable {
        /// The function.
        package var frame: FrameKey
        /// Samples through this path prefix.
        package var count: Int

        /// Creates a step.
        package init(frame: FrameKey, count: Int) {
            self.frame = frame
            self.count = count
        }
    }

    private var nodes: [Node] = []
    private var firstRoot = -1
    /// Sibling indices while one list is sorted (kept for its capacity).
    private var siblings: [Int] = []
    private var sorted = true
    /// Samples that contributed (empty samples are skipped).
    package private(set) var sampleCount = 0

    /// An empty tree with room for `capacity` nodes.
    package init(capacity: Int = 0) {
        nodes.reserveCapacity(capacity)
    }

    /// The tree of samples in capture order (oldest first).
    package init(samples: [StackSample]) {
        for (index, sample) in samples.enumerated() { add(leafFirst: sample.frames, index: index) }
    }

    /// Number of nodes (call path prefixes).
    package var nodeCount: Int { nodes.count }

    /// Empties the tree, keeping its storage.
    package mutating func removeAll() {
        nodes.removeAll(keepingCapacity: true)
        firstRoot = -1
        sampleCount = 0
        sorted = true
    }

    /// Adds one sample (frames leaf first, as captured), the `index`th of the input in capture
    /// order, and returns its leaf's node (``preorderNumber(ofNode:)`` names it in a report's
    /// order). An empty sample is skipped: `nil`.
    @discardableResult
    package mutating func add(leafFirst frames: [FrameKey], index: Int) -> Int? {
        guard !frames.isEmpty else { return nil }
        sampleCount += 1
        sorted = false
        var parent = -1
        for frame in frames.reversed() {
            let current = child(of: parent, frame: frame)
            nodes[current].count += 1
            nodes[current].lastSampleIndex = index
            parent = current
        }
        nodes[parent].selfCount += 1
        return parent
    }

    private mutating func child(of parent: Int, frame: FrameKey) -> Int {
        var at = parent < 0 ? firstRoot : nodes[parent].firstChild
        while at >= 0 {
            if nodes[at].frame == frame { return at }
            at = nodes[at].nextSibling
        }
        let created = nodes.count
        var node = Node(frame: frame, parent: parent)
        node.nextSibling = parent < 0 ? firstRoot : nodes[parent].firstChild
        nodes.append(node)
        if parent < 0 { firstRoot = created } else { nodes[parent].firstChild = created }
        return created
    }

    /// Every node's function, in no particular order (a function on several paths comes once per
    /// path).
    package func forEachFrame(_ body: (FrameKey) -> Void) {
        for node in nodes { body(node.frame) }
    }

    /// For each function, the samples in which it was the leaf.
    package var selfCounts: [FrameKey: Int] {
        var counts: [FrameKey: Int] = [:]
        for node in nodes where node.selfCount > 0 { counts[node.frame, default: 0] += node.selfCount }
        return counts
    }

    /// The blamed path, root→leaf: from the top, always follow the child with the most samples;
    /// on a tie, the child seen in the most recent sample. `body` returns `false` to stop early.
    package func forEachOnHeaviestPath(_ body: (_ frame: FrameKey, _ count: Int) -> Bool) {
        var level = firstRoot
        while level >= 0 {
            var best = level
            var at = nodes[level].nextSibling
            while at >= 0 {
                if nodes[at].comesBefore(nodes[best]) { best = at }
                at = nodes[at].nextSibling
            }
            guard body(nodes[best].frame, nodes[best].count) else { return }
            level = nodes[best].firstChild
        }
    }

    /// ``forEachOnHeaviestPath(_:)``'s steps, root→leaf. Empty when there are no samples.
    package func heaviestPath() -> [WeightedFrame] {
        var path: [WeightedFrame] = []
        forEachOnHeaviestPath { frame, count in
            path.append(WeightedFrame(frame: frame, count: count))
            return true
        }
        return path
    }

    /// ``StackSignature/init(dominantPathOf:)``'s frames, root first, into `frames` (emptied first).
    package func dominantPath(into frames: inout [FrameKey]) {
        frames.removeAll(keepingCapacity: true)
        var first: FrameKey?
        let total = sampleCount
        forEachOnHeaviestPath { frame, count in
            if first == nil { first = frame }
            guard count * 2 > total else { return false }
            frames.append(frame)
            return true
        }
        if frames.isEmpty, let first { frames.append(first) }
    }

    /// Visits every node in the order a report lists them (``ReportCallTreeNode/flatten(_:frames:)``):
    /// depth first, siblings heaviest first. `parent` is the visit number of the node's parent (the
    /// first node visited is 0), or -1 for a root.
    package mutating func preorder(_ body: (_ node: Node, _ parent: Int) -> Void) {
        sortSiblings()
        var visits = 0
        var at = firstRoot
        while at >= 0 {
            nodes[at].visit = visits
            visits += 1
            let parent = nodes[at].parent
            body(nodes[at], parent < 0 ? -1 : nodes[parent].visit)
            if nodes[at].firstChild >= 0 {
                at = nodes[at].firstChild
                continue
            }
            // No child: the next sibling of this node or of the nearest ancestor that has one.
            var up = at
            while up >= 0 && nodes[up].nextSibling < 0 { up = nodes[up].parent }
            at = up < 0 ? -1 : nodes[up].nextSibling
        }
    }

    /// The visit number ``preorder(_:)`` last gave the node that ``add(leafFirst:index:)``
    /// returned: its index among a report's flat nodes. -1 before any walk.
    package func preorderNumber(ofNode node: Int) -> Int {
        nodes.indices.contains(node) ? nodes[node].visit : -1
    }

    /// Relinks every sibling list heaviest first (then newest).
    private mutating func sortSiblings() {
        guard !sorted else { return }
        sorted = true
        firstRoot = sortedList(from: firstRoot)
        for i in nodes.indices where nodes[i].firstChild >= 0 {
            nodes[i].firstChild = sortedList(from: nodes[i].firstChild)
        }
    }

    private mutating func sortedList(from head: Int) -> Int {
        siblings.removeAll(keepingCapacity: true)
        var at = head
        while at >= 0 {
            siblings.append(at)
            at = nodes[at].nextSibling
        }
        guard siblings.count > 1 else { return head }
        // Insertion sort in place: no closure holding `nodes` (a copy on the next write), and
        // sibling lists are short.
        for i in 1..<siblings.count {
            let moving = siblings[i]
            var j = i
            while j > 0 && nodes[moving].comesBefore(nodes[siblings[j - 1]]) {
                siblings[j] = siblings[j - 1]
                j -= 1
            }
            siblings[j] = moving
        }
        for i in siblings.indices {
            nodes[siblings[i]].nextSibling = i + 1 < siblings.count ? siblings[i + 1] : -1
        }
        return siblings[0]
    }
}
