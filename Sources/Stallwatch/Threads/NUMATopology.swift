import CSampler

/// The machine's NUMA layout, through libnuma. Where NUMA is unavailable it is one node 0 that
/// holds every configured CPU and all memory, so callers never special-case it.
package struct NUMATopology: Hashable, Sendable, Codable {
    /// Whether libnuma reports NUMA support (`numa_available() >= 0`); false means the single-node fallback.
    package let isAvailable: Bool
    /// The nodes, in id order.
    package let nodes: [NUMANode]

    /// Creates a topology from its parts (for tests and decoded reports).
    package init(isAvailable: Bool, nodes: [NUMANode]) {
        self.isAvailable = isAvailable
        self.nodes = nodes
    }

    /// Reads the topology now. Free memory changes, so read it again when it matters.
    package static func current() -> NUMATopology {
        let available = sw_numa_init() == 1
        var nodes: [NUMANode] = []
        nodes.reserveCapacity(layout.count)
        for (id, cpus) in layout {
            var size: Int64 = 0
            var free: Int64 = 0
            if sw_numa_node_memory(id, &size, &free) != 0 {
                // A node libnuma lists but whose memory file is unreadable: report no memory
                // rather than dropping the node and its CPUs.
                size = 0
                free = 0
            }
            nodes.append(NUMANode(id: Int(id), cpus: cpus, memoryBytes: size, freeBytes: free))
        }
        return NUMATopology(isAvailable: available, nodes: nodes)
    }

    /// The nodes and their CPUs, fixed once libnuma is initialised: read once, not for every
    /// report (each read allocated its lists on the watchdog thread).
    private static let layout: [(id: Int32, cpus: [Int])] = {
        sw_numa_init()
        return (0..<Int(sw_numa_node_count())).compactMap { index in
            let id = sw_numa_node_id(Int32(index))
            return id >= 0 ? (id, cpus(ofNode: id)) : nil
        }
    }()

    /// The node of `cpu`, or nil for a CPU number the machine does not have.
    package static func node(ofCPU cpu: Int) -> Int? {
        sw_numa_init()
        guard let cpu = Int32(exactly: cpu) else { return nil }
        let node = sw_numa_node_of_cpu(cpu)
        return node >= 0 ? Int(node) : nil
    }

    /// The CPU the calling thread is running on at this instant, or nil if the kernel cannot say.
    package static var currentCPU: Int? {
        let cpu = sw_current_cpu()
        return cpu >= 0 ? Int(cpu) : nil
    }

    private static func cpus(ofNode node: Int32) -> [Int] {
        var capacity = 64
        // The table is fixed after initialization, so a second attempt with the reported count fits.
        for _ in 0..<2 {
            var count = 0
            var rc: Int32 = 0
            let cpus = [Int32](unsafeUninitializedCapacity: capacity) { buffer, initialized in
                rc = sw_numa_node_cpus(node, buffer.baseAddress, buffer.count, &count)
                initialized = rc == 0 ? min(count, buffer.count) : 0
            }
            if rc != 0 { return [] }
            if count <= capacity { return cpus.map(Int.init) }
            capacity = count
        }
        return []
    }
}
