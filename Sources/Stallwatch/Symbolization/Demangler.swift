#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Swift and C++ demangling through the runtimes already loaded in the process.
package enum Demangler {
    private typealias SwiftDemangle = @convention(c) (
        UnsafePointer<CChar>?, Int, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UInt32
    ) -> UnsafeMutablePointer<CChar>?
    private typealias CxaDemangle = @convention(c) (
        UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int32>?
    ) -> UnsafeMutablePointer<CChar>?

    // Looked up once: swift_demangle is exported by libswiftCore, __cxa_demangle by libstdc++.
    private static let swiftDemangle: SwiftDemangle? = {
        guard let sym = LoadedSymbols.address(of: "swift_demangle") else { return nil }
        return unsafeBitCast(sym, to: SwiftDemangle.self)
    }()
    private static let cxaDemangle: CxaDemangle? = {
        guard let sym = LoadedSymbols.address(of: "__cxa_demangle") else { return nil }
        return unsafeBitCast(sym, to: CxaDemangle.self)
    }()

    /// The demangled form of `name`, or `name` itself when it is not a Swift or C++ mangled name.
    package static func demangle(_ name: String) -> String {
        if name.hasPrefix("$s") || name.hasPrefix("_$s") || name.hasPrefix("$S") || name.hasPrefix("_T0") {
            if let f = swiftDemangle, let out = name.withCString({ f($0, strlen($0), nil, nil, 0) }) {
                defer { free(out) }
                return String(cString: out)
            }
        } else if name.hasPrefix("_Z"), let f = cxaDemangle {
            var status: Int32 = 0
            if let out = name.withCString({ f($0, nil, nil, &status) }), status == 0 {
                defer { free(out) }
                return String(cString: out)
            }
        }
        return name
    }
}
