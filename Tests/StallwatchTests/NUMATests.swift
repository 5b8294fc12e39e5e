import CSampler
import Foundation
import Stallwatch
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

@Suite("NUMA topology")
struct NUMATests {
    @Test func everyCPUBelongsToExactlyOneNode() {
        let topology = NUMATopology.current()
        #expect(!topology.nodes.isEmpty)
        #expect(topology.isAvailable == (sw_numa_init() == 1))
        let configured = Int(sysconf(Int32(_SC_NPROCESSORS_CONF)))
        if !topology.isAvailable {
            // The fallback promises exactly one node 0 with every configured CPU.
            #expect(topology.nodes.map(\.id) == [0])
            #expect(topology.nodes.first?.cpus == Array(0..<configured))
        }
        #expect(Set(topology.nodes.map(\.id)).count == topology.nodes.count)
        #expect(configured >= 1)
        for cpu in 0..<configured {
            let owners = topology.nodes.filter { $0.cpus.contains(cpu) }.map(\.id)
            #expect(owners.count == 1, "CPU \(cpu) belongs to nodes \(owners)")
            #expect(NUMATopology.node(ofCPU: cpu) == owners.first)
        }
    }

    @Test func nodeMemoryIsConsistent() {
        let topology = NUMATopology.current()
        #expect(topology.nodes.reduce(0) { $0 + $1.memoryBytes } > 0)
        for node in topology.nodes {
            // Memoryless nodes exist on some machines; any node with CPUs here should have memory
            // on the machines this runs on, but only the invariants are asserted for every node.
            #expect(node.memoryBytes >= 0)
            #expect(node.freeBytes >= 0)
            #expect(node.freeBytes <= node.memoryBytes, "node \(node.id): free \(node.freeBytes) > size \(node.memoryBytes)")
        }
    }

    @Test func unknownCPUsHaveNoNode() {
        #expect(NUMATopology.node(ofCPU: -1) == nil)
        #expect(NUMATopology.node(ofCPU: 1_000_000) == nil)
        #expect(NUMATopology.node(ofCPU: Int.max) == nil)
    }

    @Test func currentThreadMapsToAKnownNode() throws {
        let nodeIDs = Set(NUMATopology.current().nodes.map(\.id))
        let info = try ThreadInfo.read(.current)
        let node = try #require(info.numaNode)
        #expect(nodeIDs.contains(node))

        let cpu = try #require(NUMATopology.currentCPU)
        #expect((0..<Int(sysconf(Int32(_SC_NPROCESSORS_CONF)))).contains(cpu))
        #expect(NUMATopology.node(ofCPU: cpu).map(nodeIDs.contains) == true)
    }

    @Test func topologyRoundTripsThroughJSON() throws {
        let topology = NUMATopology.current()
        let data = try JSONEncoder().encode(topology)
        #expect(try JSONDecoder().decode(NUMATopology.self, from: data) == topology)
    }
}
