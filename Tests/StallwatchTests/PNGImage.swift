import Foundation
import Stallwatch

/// The pixels of an 8-bit RGB or RGBA PNG (what Chromium's screenshots are), decoded here so a test
/// can tell a drawn picture from a blank one.
struct PNGImage {
    let width: Int
    let height: Int
    /// RGB triples, row by row.
    let pixels: [UInt32]

    struct Unsupported: Error, CustomStringConvertible {
        let description: String
    }

    init(_ data: [UInt8]) throws {
        guard data.count > 8, Array(data[0..<8]) == [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] else {
            throw Unsupported(description: "not a PNG")
        }
        func u32(_ o: Int) -> Int { Int(data[o]) << 24 | Int(data[o + 1]) << 16 | Int(data[o + 2]) << 8 | Int(data[o + 3]) }
        var offset = 8
        var width = 0, height = 0, channels = 0
        var compressed: [UInt8] = []
        while offset + 8 <= data.count {
            let length = u32(offset)
            let type = String(decoding: data[offset + 4..<offset + 8], as: UTF8.self)
            let body = offset + 8
            guard body + length <= data.count else { break }
            if type == "IHDR" {
                width = u32(body)
                height = u32(body + 4)
                guard data[body + 8] == 8, [2, 6].contains(data[body + 9]), data[body + 12] == 0 else {
                    throw Unsupported(description: "only 8-bit, non-interlaced RGB/RGBA")
                }
                channels = data[body + 9] == 2 ? 3 : 4
            } else if type == "IDAT" {
                compressed += data[body..<body + length]
            }
            offset = body + length + 4
        }
        let stride = width * channels
        let raw = try Compression.inflate(compressed, limit: (stride + 1) * height)
        guard raw.count == (stride + 1) * height else { throw Unsupported(description: "short image data") }
        var previous = [UInt8](repeating: 0, count: stride)
        var pixels: [UInt32] = []
        pixels.reserveCapacity(width * height)
        for row in 0..<height {
            let filter = raw[row * (stride + 1)]
            var line = Array(raw[row * (stride + 1) + 1..<(row + 1) * (stride + 1)])
            for i in 0..<stride {
                let a = i >= channels ? Int(line[i - channels]) : 0
                let b = Int(previous[i])
                let c = i >= channels ? Int(previous[i - channels]) : 0
                let predictor: Int
                switch filter {
                case 0: predictor = 0
                case 1: predictor = a
                case 2: predictor = b
                case 3: predictor = (a + b) / 2
                case 4:
                    let p = a + b - c
                    let (pa, pb, pc) = (abs(p - a), abs(p - b), abs(p - c))
                    predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c
                default: throw Unsupported(description: "filter \(filter)")
                }
                line[i] = UInt8(truncatingIfNeeded: Int(line[i]) + predictor)
            }
            for x in 0..<width {
                let p = x * channels
                pixels.append(UInt32(line[p]) << 16 | UInt32(line[p + 1]) << 8 | UInt32(line[p + 2]))
            }
            previous = line
        }
        (self.width, self.height, self.pixels) = (width, height, pixels)
    }
}
