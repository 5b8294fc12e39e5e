// swift-tools-version:6.1
import PackageDescription

// The example servers wired to Stallwatch, one package: their dependencies (swift-nio, swift-log,
// Stallwatch itself, ...) are resolved and compiled once for all of them, not once per server.
// Each server's sources stay in its own folder (`path:` below); the binaries land in
// Examples/.build/<configuration>/<Name>, e.g. `swift run --package-path Examples HummingbirdServer`.
let package = Package(
    name: "Examples",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "HummingbirdServer", targets: ["HummingbirdServer"]),
        .executable(name: "HummingbirdServerBare", targets: ["HummingbirdServerBare"]),
        .executable(name: "NIOServer", targets: ["NIOServer"]),
        .executable(name: "VaporServer", targets: ["VaporServer"]),
    ],
    dependencies: [
        // The OTLPProfiles trait: the Hummingbird example sends a profile per stall over OTLP/HTTP
        // (async-http-client, which swift-otel builds here anyway).
        .package(name: "Stallwatch", path: "..", traits: ["OTLPProfiles"]),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
        // Only the examples export Prometheus: the library speaks swift-metrics, the app picks the backend.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // The in-memory tracer behind STALLWATCH_EXAMPLE_TRACER=memory (a test aid: ExampleTracer.swift).
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.1.0"),
        // OpenTelemetry (logs, traces, metrics over OTLP/HTTP) when OTEL_EXPORTER_OTLP_ENDPOINT is set:
        // only the Hummingbird example depends on it, so the library's own builds never compile it.
        // The HTTP trait alone: the gRPC exporter's dependencies would double the build.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        // What a server must never do on a thread that has to stay responsive, shared by the example
        // servers (each calls these from a handler of its own, so reports can be checked for the
        // handler). CBlockingWork calls Debian's zlib, libcrypto and libsqlite3 and glibc's
        // qsort/regexec: code built without frame pointers, where a stalled thread's stack is hardest
        // to recover.
        .target(
            name: "CBlockingWork",
            path: "BlockingWork/Sources/CBlockingWork",
            linkerSettings: [.linkedLibrary("z"), .linkedLibrary("crypto"), .linkedLibrary("sqlite3")]
        ),
        .target(
            name: "BlockingWork",
            dependencies: ["CBlockingWork"],
            path: "BlockingWork/Sources/BlockingWork"
        ),
        // A Hummingbird 2 service: route handlers run as jobs on the Swift concurrency pool, which
        // Stallwatch watches one job at a time; the NIO event loops are pinged.
        .executableTarget(
            name: "HummingbirdServer",
            dependencies: [
                "BlockingWork",
                .product(name: "Stallwatch", package: "Stallwatch"),
                .product(name: "StallwatchNIO", package: "Stallwatch"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
            ],
            path: "HummingbirdServer/Sources/HummingbirdServer"
        ),
        // `bench server`'s "off" side: the same routes (symlinked sources), the same tracing
        // middleware and metrics backend, and nothing of Stallwatch's running.
        .executableTarget(
            name: "HummingbirdServerBare",
            dependencies: [
                "BlockingWork",
                .product(name: "Stallwatch", package: "Stallwatch"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            path: "HummingbirdServer/Sources/HummingbirdServerBare"
        ),
        // A raw SwiftNIO HTTP/1 server: every event loop of its group is pinged, so a channel handler
        // that blocks its loop is reported with the handler's own function.
        .executableTarget(
            name: "NIOServer",
            dependencies: [
                "BlockingWork",
                .product(name: "Stallwatch", package: "Stallwatch"),
                .product(name: "StallwatchNIO", package: "Stallwatch"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "NIOServer/Sources/NIOServer"
        ),
        // A Vapor 4 service, the twin of HummingbirdServer: its `async` route handlers run as jobs on
        // the Swift concurrency pool, which Stallwatch watches one job at a time; its synchronous
        // ones (/inject-loop) run on Vapor's NIO event loops, which are pinged.
        .executableTarget(
            name: "VaporServer",
            dependencies: [
                "BlockingWork",
                .product(name: "Stallwatch", package: "Stallwatch"),
                .product(name: "StallwatchNIO", package: "Stallwatch"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            path: "VaporServer/Sources/VaporServer"
        ),
    ],
    swiftLanguageModes: [.v6]
)
