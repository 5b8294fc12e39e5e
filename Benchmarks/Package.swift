// swift-tools-version:6.1
import PackageDescription

// Micro-benchmarks with package-benchmark. A separate package so CI (which builds only the root
// package) never fetches or builds it. Run: `cd Benchmarks && swift package benchmark`.
let package = Package(
    name: "StallwatchBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Stallwatch", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "StallwatchBenchmarks",
            dependencies: [
                .product(name: "Stallwatch", package: "Stallwatch"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/StallwatchBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
