#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension stat {
    /// The modification time in milliseconds since 1970: the field is `st_mtim` in glibc and
    /// musl, `st_mtimespec` on Darwin.
    var modificationMilliseconds: Int64 {
#if canImport(Darwin)
        Int64(st_mtimespec.tv_sec) * 1000 + Int64(st_mtimespec.tv_nsec) / 1_000_000
#else
        Int64(st_mtim.tv_sec) * 1000 + Int64(st_mtim.tv_nsec) / 1_000_000
#endif
    }
}
