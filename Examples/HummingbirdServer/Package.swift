// swift-tools-version:6.1
import PackageDescription

// A Hummingbird 2 service wired to Stallwatch: route handlers run as jobs on the Swift concurrency
// pool, which Stallwatch watches one job at a time; the NIO event loops are pinged.
let package = Package(
    name: "HummingbirdServer",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Stallwatch", path: "../.."),
        .package(path: "../BlockingWork"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        // Only the example exports Prometheus: the library speaks swift-metrics, the app picks the backend.
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // The in-memory tracer behind STALLWATCH_EXAMPLE_TRACER=memory (a test aid: ExampleTracer.swift).
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.1.0"),
        // OpenTelemetry (logs, traces, metrics over OTLP/HTTP) when OTEL_EXPORTER_OTLP_ENDPOINT is set:
        // only the example depends on it, so the library's own builds never compile it. The HTTP
        // trait alone: the gRPC exporter's dependencies would double the build.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
    ],
    targets: [
        .executableTarget(
            name: "HummingbirdServer",
            dependencies: [
                .product(name: "Stallwatch", package: "Stallwatch"),
                .product(name: "BlockingWork", package: "BlockingWork"),
                .product(name: "StallwatchNIO", package: "Stallwatch"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "OTel", package: "swift-otel"),
            ]
        ),
        // `bench server`'s "off" side: the same routes (symlinked sources), the same tracing
        // middleware and metrics backend, and nothing of Stallwatch's running.
        .executableTarget(
            name: "HummingbirdServerBare",
            dependencies: [
                .product(name: "Stallwatch", package: "Stallwatch"),
                .product(name: "BlockingWork", package: "BlockingWork"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
