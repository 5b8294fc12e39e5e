import StallwatchReport
/// The identity of a *function* in a stack: its start address when the symbolizer knows it,
/// else the raw return address. Keying by function lets a CPU-bound stall whose PC moves inside
/// one function still count as "the same stack".
package struct FrameKey: Hashable, Sendable, Codable, Comparable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// The function's start address, or the raw address when the function is unknown.
    package var address: UInt64

    /// Wraps an address already reduced to a function identity.
    package init(address: UInt64) {
        self.address = address
    }

    /// The key for a program counter: the enclosing function's start if known, else the PC.
    package init(pc: UInt64, functionStart: UInt64?) {
        self.address = functionStart ?? pc
    }

    /// Lets tests write `[0x10, 0x20]` for a stack.
    package init(integerLiteral value: UInt64) {
        self.address = value
    }

    /// Orders by address, for deterministic output.
    package static func < (lhs: FrameKey, rhs: FrameKey) -> Bool {
        lhs.address < rhs.address
    }

    /// Coded as a bare integer.
    package init(from decoder: any Decoder) throws {
        address = try decoder.singleValueContainer().decode(UInt64.self)
    }

    /// Coded as a bare integer.
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(address)
    }

    /// `0x…` hexadecimal.
    package var description: String { "0x" + String(address, radix: 16) }
}
