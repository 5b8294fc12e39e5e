/// One NUMA node: its CPUs and memory.
package struct NUMANode: Hashable, Sendable, Codable {
    /// The kernel's node id (ids can be sparse).
    package let id: Int
    /// The CPUs of this node, ascending.
    package let cpus: [Int]
    /// Memory attached to the node, in bytes (0 for a memoryless node).
    package let memoryBytes: Int64
    /// Free memory on the node, in bytes, when it was read.
    package let freeBytes: Int64

    /// Creates a node description from its parts.
    package init(id: Int, cpus: [Int], memoryBytes: Int64, freeBytes: Int64) {
        self.id = id
        self.cpus = cpus
        self.memoryBytes = memoryBytes
        self.freeBytes = freeBytes
    }
}
