#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Symbols of whatever images the process has loaded, looked up by name through the dynamic
/// loader's default scope (`RTLD_DEFAULT`). That handle is a null pointer in glibc and musl, which
/// Swift cannot import as a name, and -2 on Darwin, whose SDK names it.
enum LoadedSymbols {
    /// The address of `name` in the first loaded image that exports it, or `nil`.
    static func address(of name: String) -> UnsafeMutableRawPointer? {
#if canImport(Darwin)
        dlsym(RTLD_DEFAULT, name)
#else
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), name)
#endif
    }
}
