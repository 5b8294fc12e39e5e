import CCompression

/// gzip and xz through the system's zlib and liblzma (`Sources/CCompression`).
package enum Compression {
    /// Why compressing or decompressing failed.
    package struct Failure: Error, Equatable, CustomStringConvertible {
        /// What failed, in words.
        package var description: String
    }

    /// `bytes` as one gzip member.
    package static func gzip(_ bytes: [UInt8]) throws(Failure) -> [UInt8] {
        try call("gzip") { out, count in bytes.withUnsafeBufferPointer { sw_gzip($0.baseAddress, $0.count, out, count) } }
    }

    /// Inflates a gzip or zlib stream of at most `limit` bytes once inflated.
    package static func inflate(_ bytes: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        try call("inflate") { out, count in
            bytes.withUnsafeBufferPointer { sw_inflate($0.baseAddress, $0.count, max(limit, 0), out, count) }
        }
    }

    /// Decompresses an .xz stream of at most `limit` bytes once decompressed.
    package static func xzDecompress(_ bytes: UnsafeRawBufferPointer, limit: Int) throws(Failure) -> [UInt8] {
        try call("xz") { out, count in
            sw_xz_decompress(bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count, max(limit, 0), out, count)
        }
    }

    private static func call(
        _ what: String,
        _ body: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, UnsafeMutablePointer<Int>) -> Int32
    ) throws(Failure) -> [UInt8] {
        var out: UnsafeMutablePointer<UInt8>?
        var count = 0
        guard body(&out, &count) == 0 else {
            throw Failure(description: "\(what) failed: damaged input, or larger than allowed")
        }
        defer { sw_compression_free(out) }
        guard let out else { return [] }
        return Array(UnsafeBufferPointer(start: out, count: count))
    }
}
