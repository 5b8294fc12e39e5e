/// Process-wide facts at the time of the report.
public struct ProcessFacts: Sendable, Equatable, Codable {
    /// Process CPU time ÷ wall time × 100 over the last reading (100 = one full core; may
    /// exceed 100 on several cores).
    public var cpuPercent: Double
    /// Resident set size in bytes.
    public var residentBytes: UInt64
    /// CPUs available to the process.
    public var cores: Int

    /// Creates process facts.
    public init(cpuPercent: Double, residentBytes: UInt64, cores: Int) {
        self.cpuPercent = cpuPercent
        self.residentBytes = residentBytes
        self.cores = cores
    }
}

/// One NUMA node.
public struct NUMANode: Sendable, Equatable, Codable {
    /// Node number.
    public var id: Int
    /// CPUs on the node.
    public var cpus: [Int]
    /// Memory on the node, bytes.
    public var memoryBytes: UInt64
    /// Free memory on the node, bytes.
    public var freeBytes: UInt64

    /// Creates a node description.
    public init(id: Int, cpus: [Int], memoryBytes: UInt64, freeBytes: UInt64) {
        self.id = id
        self.cpus = cpus
        self.memoryBytes = memoryBytes
        self.freeBytes = freeBytes
    }
}

/// The machine's NUMA layout and where the stalled thread last ran.
public struct NUMAFacts: Sendable, Equatable, Codable {
    /// All nodes.
    public var nodes: [NUMANode]
    /// Node of the CPU the stalled thread last ran on, if known.
    public var stalledThreadNode: Int?

    /// Creates NUMA facts.
    public init(nodes: [NUMANode], stalledThreadNode: Int?) {
        self.nodes = nodes
        self.stalledThreadNode = stalledThreadNode
    }
}
