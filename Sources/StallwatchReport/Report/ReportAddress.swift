/// A code address in a report, coded as a `"0x…"` hex string: readable next to `objdump` and
/// `addr2line` output, and safe from JSON parsers that turn large integers into doubles.
public struct ReportAddress: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The address.
    public var value: UInt64

    /// Wraps an address.
    public init(_ value: UInt64) {
        self.value = value
    }

    /// Decodes `"0x…"` (or a bare integer, for hand-written files).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(UInt64.self) {
            value = number
            return
        }
        let text = try container.decode(String.self)
        let digits = text.hasPrefix("0x") || text.hasPrefix("0X") ? text.dropFirst(2) : Substring(text)
        guard let parsed = UInt64(digits, radix: 16) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a hex address: \(text)")
        }
        value = parsed
    }

    /// Encodes as `"0x…"` lowercase hex.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// `"0x…"` lowercase hex.
    public var description: String { "0x" + String(value, radix: 16) }
}
