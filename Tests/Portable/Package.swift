// swift-tools-version:6.1
import PackageDescription

// Stallwatch as it builds where it cannot sample (macOS, any platform but Linux), checked on Linux:
// scripts/portable-check.sh builds this package with STALLWATCH_PORTABLE_ONLY defined for C and
// Swift, which takes the non-Linux side of CSampler/include/sw_platform.h and of
// Sources/Stallwatch/Platform. Only public API: what a service on a Mac compiles against.
let package = Package(
    name: "PortableCheck",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Stallwatch", path: "../.."),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // The watchdog without stacks, plus the snippets (symlinked) the README and the
        // documentation catalog show that need nothing but Stallwatch.
        .testTarget(
            name: "PortableTests",
            dependencies: [
                .product(name: "Stallwatch", package: "Stallwatch"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The catalog's SwiftNIO snippets (symlinked): StallwatchNIO builds here too.
        .testTarget(
            name: "PortableNIOSnippets",
            dependencies: [
                .product(name: "Stallwatch", package: "Stallwatch"),
                .product(name: "StallwatchNIO", package: "Stallwatch"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
