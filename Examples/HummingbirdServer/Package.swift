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
    ],
    targets: [
        .executableTarget(
            name: "HummingbirdServer",
            dependencies: [
                .product(name: "Stallwatch", package: "Stallwatch"),
                .product(name: "BlockingWork", package: "BlockingWork"),
                .product(name: "StallwatchNIO", package: "Stallwatch"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
