// swift-tools-version:6.1
import PackageDescription

// A Vapor 4 service wired to Stallwatch, the twin of HummingbirdServer: its `async` route handlers
// run as jobs on the Swift concurrency pool, which Stallwatch watches one job at a time; its
// synchronous ones (/inject-loop) run on Vapor's NIO event loops, which are pinged.
let package = Package(
    name: "VaporServer",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Stallwatch", path: "../.."),
        .package(path: "../BlockingWork"),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
        // The in-memory tracer behind STALLWATCH_EXAMPLE_TRACER=memory (a test aid: ExampleTracer.swift).
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.1.0"),
    ],
    targets: [
        .executableTarget(
            name: "VaporServer",
            dependencies: [
                .product(name: "Stallwatch", package: "Stallwatch"),
                .product(name: "StallwatchNIO", package: "Stallwatch"),
                .product(name: "BlockingWork", package: "BlockingWork"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
