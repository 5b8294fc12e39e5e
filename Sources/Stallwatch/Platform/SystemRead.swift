#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `read(2)` under a name no type's own `read` method shadows. Inside such a type the C function
/// needs its module's name (`Glibc.read`, `Darwin.read`), which differs by platform; here, at
/// file scope, the plain name reaches it on every platform.
@inline(__always)
func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}
