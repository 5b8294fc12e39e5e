extension ThreadInfo {
    /// The NUMA node of the CPU the thread last ran on (nil if that CPU is unknown).
    package var numaNode: Int? {
        NUMATopology.node(ofCPU: lastCPU)
    }
}
