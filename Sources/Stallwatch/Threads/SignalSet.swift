/// A set of signals as the kernel's 64-bit mask (`SigBlk`, `SigIgn`, ...): bit n-1 is signal n.
package struct SignalSet: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The mask; bit `n - 1` set means signal `n` is in the set.
    package let rawValue: UInt64

    /// Wraps a kernel signal mask.
    package init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// A set holding exactly `signals` (values outside 1...64 are ignored).
    package init(_ signals: some Sequence<Int32>) {
        var mask: UInt64 = 0
        for signal in signals where (1...64).contains(signal) {
            mask |= 1 << UInt64(signal - 1)
        }
        rawValue = mask
    }

    /// Whether `signal` (1...64) is in the set; false for any other number.
    package func contains(_ signal: Int32) -> Bool {
        guard (1...64).contains(signal) else { return false }
        return rawValue & (1 << UInt64(signal - 1)) != 0
    }

    /// The signal numbers in the set, ascending.
    package var signals: [Int32] {
        (1...64).filter { contains($0) }
    }

    /// The mask in the 16-digit hex form `/proc/<pid>/status` uses.
    package var description: String {
        let hex = String(rawValue, radix: 16)
        return String(repeating: "0", count: max(0, 16 - hex.count)) + hex
    }
}
