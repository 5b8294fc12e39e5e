// swift-tools-version:6.1
import PackageDescription

// What a server must never do on a thread that has to stay responsive, shared by the example
// servers (each calls these from a handler of its own, so reports can be checked for the handler).
// CBlockingWork calls Debian's zlib, libcrypto and libsqlite3 and glibc's qsort/regexec: code built
// without frame pointers, where a stalled thread's stack is hardest to recover.
let package = Package(
    name: "BlockingWork",
    products: [.library(name: "BlockingWork", targets: ["BlockingWork"])],
    targets: [
        .target(
            name: "CBlockingWork",
            linkerSettings: [.linkedLibrary("z"), .linkedLibrary("crypto"), .linkedLibrary("sqlite3")]
        ),
        .target(name: "BlockingWork", dependencies: ["CBlockingWork"]),
    ],
    swiftLanguageModes: [.v6]
)
