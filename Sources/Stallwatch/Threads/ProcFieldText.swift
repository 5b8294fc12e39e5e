/// Values read out of a `/proc` file's text without allocating (the watchdog reads some of these
/// files every round of a stall).
enum ProcFieldText {
    /// The decimal number that follows the first line starting with `key` (e.g. `"read_bytes: "`),
    /// up to the line's end; `nil` when no line starts so, or what follows is not a number that fits.
    static func unsigned<Text: Collection<UInt8>>(after key: StaticString, in text: Text) -> UInt64? {
        let keyBytes = UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount)
        var index = text.startIndex
        while index != text.endIndex {
            // `index` is a line's start: does the key begin here?
            var cursor = index
            var matched = 0
            while matched < keyBytes.count, cursor != text.endIndex, text[cursor] == keyBytes[matched] {
                matched += 1
                cursor = text.index(after: cursor)
            }
            if matched == keyBytes.count { return digits(of: text, from: cursor) }
            // On to the next line.
            while index != text.endIndex, text[index] != UInt8(ascii: "\n") { index = text.index(after: index) }
            if index != text.endIndex { index = text.index(after: index) }
        }
        return nil
    }

    /// The decimal digits from `start` up to a newline or the end, as a number.
    private static func digits<Text: Collection<UInt8>>(of text: Text, from start: Text.Index) -> UInt64? {
        var value: UInt64 = 0
        var count = 0
        var index = start
        while index != text.endIndex, text[index] != UInt8(ascii: "\n") {
            let byte = text[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            guard !overflowTimes, !overflowSum else { return nil }
            value = sum
            count += 1
            index = text.index(after: index)
        }
        return count > 0 ? value : nil
    }
}
