import ArgumentParser

/// `bench`: measures what Stallwatch costs. See `bench sampler --help` for the method.
@main
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure what Stallwatch costs on this machine.",
        subcommands: [SamplerBenchmark.self, SnapshotBenchmark.self, ProbeBenchmark.self, DetectBenchmark.self, ServerBenchmark.self,
                      MemoryBenchmark.self, AllocationsBenchmark.self, WakeFloorBenchmark.self, WorkloadCommand.self]
    )
}
