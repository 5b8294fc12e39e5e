// swift-tools-version:6.1
import PackageDescription

// Warnings-as-errors for C are passed on the command line in CI (`-Xcc -Werror ...`),
// never as unsafeFlags here: SwiftPM refuses a dependency that uses unsafe flags.
let package = Package(
    name: "Stallwatch",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Stallwatch", targets: ["Stallwatch", "StallwatchReport"]),
        // SwiftNIO wiring, a product of its own: services without NIO never build NIO for it.
        .library(name: "StallwatchNIO", targets: ["StallwatchNIO"]),
        .executable(name: "bench", targets: ["bench"]),
        .executable(name: "stallwatch", targets: ["StallwatchCLI"]),
    ],
    // Off by default: only a service that sends a profile per stall over OTLP/HTTP builds
    // async-http-client (2.5–4.5 min on 2 cores) for it.
    traits: [
        .trait(name: "OTLPProfiles",
               description: "OTLPProfileExporter sends a profile per stall over OTLP/HTTP (async-http-client)."),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // Request attribution: the request's ServiceContext (trace and span ids) and the stall's span.
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.1.0"),
        // `swift package generate-documentation` (the DocC catalogs in Sources/*/*.docc).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // The OTLPProfiles trait's HTTP client, as swift-otel's own exporters use it.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        // The hot path: signal-based stack capture, thread facts, CPU clocks, NUMA. C11. Linux only
        // behind include/sw_platform.h; elsewhere src/no_sampler.c answers "not available".
        .target(
            name: "CSampler",
            path: "CSampler",
            sources: ["src"],
            publicHeadersPath: "include",
            cSettings: [.define("_GNU_SOURCE")],
            // Linux only: elsewhere the sampler's sources compile to nothing (sw_platform.h).
            linkerSettings: [
                // libunwind-generic: Debian's link to this architecture's libunwind-<arch>, whose
                // remote-unwind entry points (unw_init_remote, ...) are named after the architecture.
                .linkedLibrary("unwind-generic", .when(platforms: [.linux])),
                .linkedLibrary("unwind", .when(platforms: [.linux])),
                .linkedLibrary("numa", .when(platforms: [.linux])),
                .linkedLibrary("dl", .when(platforms: [.linux])),
            ]
        ),
        // gzip (pprof exports) and xz (MiniDebugInfo) through the system's zlib and liblzma. zlib
        // ships in every SDK; liblzma is not in macOS's, and MiniDebugInfo is an ELF (Linux) matter.
        .target(
            name: "CCompression",
            path: "Sources/CCompression",
            linkerSettings: [.linkedLibrary("z"), .linkedLibrary("lzma", .when(platforms: [.linux]))]
        ),
        // What users type: the configuration and the report model (re-exported by Stallwatch).
        .target(
            name: "StallwatchReport",
            path: "Sources/StallwatchReport"
        ),
        // Pure policy: inputs in, decisions out. No threads, clocks or I/O. Package access only.
        .target(
            name: "StallwatchPolicy",
            dependencies: ["StallwatchReport"],
            path: "Sources/StallwatchPolicy"
        ),
        // A report as pprof, flame graph, folded stacks and listing. Package access only.
        .target(
            name: "StallwatchExport",
            dependencies: ["StallwatchReport"],
            path: "Sources/StallwatchExport"
        ),
        .target(
            name: "Stallwatch",
            dependencies: [
                "CSampler",
                "CCompression",
                "StallwatchReport",
                "StallwatchPolicy",
                "StallwatchExport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["OTLPProfiles"])),
                .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["OTLPProfiles"])),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["OTLPProfiles"])),
            ],
            path: "Sources/Stallwatch"
        ),
        .target(
            name: "StallwatchNIO",
            dependencies: [
                "Stallwatch",
                .product(name: "NIOCore", package: "swift-nio"),
                // NIOEventLoopMetricsDelegate (exact tick start and end) lives in NIOPosix.
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Sources/StallwatchNIO"
        ),
        // The bench command's own C helpers (malloc counter, SIGPROF recorder); never in the library.
        .target(
            name: "BenchSupport",
            path: "Sources/BenchSupport"
        ),
        // The project's overhead goals, judged by `bench sampler`; never in the library.
        .target(
            name: "BenchGoals",
            path: "Sources/BenchGoals"
        ),
        .executableTarget(
            name: "bench",
            dependencies: [
                "Stallwatch",
                "StallwatchPolicy",
                "BenchGoals",
                "BenchSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/bench"
        ),
        // The `stallwatch` command (the product keeps that name; the folder differs from the
        // library's by more than case, for case-folding file systems).
        .executableTarget(
            name: "StallwatchCLI",
            dependencies: [
                "Stallwatch",
                "StallwatchPolicy",
                "StallwatchExport",
                "CSampler",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/StallwatchCLI"
        ),
        // A report made as the watchdog makes one, for the report and export tests.
        .target(
            name: "ReportFixtures",
            dependencies: ["StallwatchReport", "StallwatchPolicy"],
            path: "Tests/ReportFixtures"
        ),
        .testTarget(
            name: "StallwatchReportTests",
            dependencies: ["StallwatchReport", "StallwatchPolicy", "ReportFixtures"],
            path: "Tests/StallwatchReportTests"
        ),
        .testTarget(
            name: "StallwatchPolicyTests",
            dependencies: ["StallwatchPolicy", "StallwatchReport"],
            path: "Tests/StallwatchPolicyTests"
        ),
        .testTarget(
            name: "StallwatchExportTests",
            dependencies: ["StallwatchExport", "StallwatchReport", "StallwatchPolicy", "ReportFixtures"],
            path: "Tests/StallwatchExportTests"
        ),
        .testTarget(
            name: "BenchGoalsTests",
            dependencies: ["BenchGoals"],
            path: "Tests/BenchGoalsTests"
        ),
        .target(
            name: "CSamplerTestSupport",
            dependencies: ["CSampler"],
            path: "Tests/CSamplerTestSupport",
            // zlib, libcrypto and libsqlite3 for the foreign-library stall workloads: a test-only
            // target, so the library products never link them (CCompression links zlib on its own).
            linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("z"), .linkedLibrary("crypto"), .linkedLibrary("sqlite3")]
        ),
        .testTarget(
            name: "StallwatchTests",
            dependencies: [
                "Stallwatch", "StallwatchPolicy", "StallwatchExport", "CSampler", "CSamplerTestSupport", "CCompression",
                "ReportFixtures",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            path: "Tests/StallwatchTests"
        ),
        .testTarget(
            name: "StallwatchNIOTests",
            dependencies: [
                "StallwatchNIO", "Stallwatch", "StallwatchPolicy",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Tests/StallwatchNIOTests"
        ),
    ],
    swiftLanguageModes: [.v6]
)
