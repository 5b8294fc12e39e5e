// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "MyService",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/OWNER/stallwatch", branch: "main"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    ],
    targets: [
        .executableTarget(
            name: "MyService",
            dependencies: [
                .product(name: "Stallwatch", package: "stallwatch"),
                .product(name: "StallwatchNIO", package: "stallwatch"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
