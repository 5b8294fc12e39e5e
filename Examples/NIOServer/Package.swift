// swift-tools-version:6.1
import PackageDescription

// A raw SwiftNIO HTTP/1 server wired to Stallwatch: every event loop of its group is pinged, so a
// channel handler that blocks its loop is reported with the handler's own function.
let package = Package(
    name: "NIOServer",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Stallwatch", path: "../.."),
        .package(path: "../BlockingWork"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .executableTarget(
            name: "NIOServer",
            dependencies: [
                .product(name: "Stallwatch", package: "Stallwatch"),
                .product(name: "BlockingWork", package: "BlockingWork"),
                .product(name: "StallwatchNIO", package: "Stallwatch"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
