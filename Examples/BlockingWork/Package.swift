// swift-tools-version:6.1
import PackageDescription

// What a server must never do on a thread that has to stay responsive, shared by the example
// servers (each calls these from a handler of its own, so reports can be checked for the handler).
let package = Package(
    name: "BlockingWork",
    products: [.library(name: "BlockingWork", targets: ["BlockingWork"])],
    targets: [.target(name: "BlockingWork")],
    swiftLanguageModes: [.v6]
)
