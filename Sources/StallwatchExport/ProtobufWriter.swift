import StallwatchReport
/// The protocol buffers wire format, for writing only: enough for `profile.proto` and OTLP's
/// profiles (varints, fixed64, length-delimited fields, packed repeated integers). Hand-written so the package needs no
/// protobuf runtime; `Tests/StallwatchTests/PprofConsumerTests.swift` checks its output with
/// `protoc --decode` against the canonical schema.
package struct ProtobufWriter: Sendable {
    /// The encoded message so far.
    package private(set) var bytes: [UInt8] = []

    /// An empty message.
    package init() {}

    /// A varint field (`uint64`, `bool`, ids). Proto3 leaves zero values out, and so does this.
    package mutating func uint64(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, wireType: 0)
        varint(value)
    }

    /// An `int64` field: two's complement in a varint, as proto3 encodes it (negative values take 10 bytes).
    package mutating func int64(_ field: Int, _ value: Int64) {
        uint64(field, UInt64(bitPattern: value))
    }

    /// A `bool` field.
    package mutating func bool(_ field: Int, _ value: Bool) {
        uint64(field, value ? 1 : 0)
    }

    /// A `string` field, UTF-8. Written even when empty: repeated strings (the string table) keep
    /// their position.
    package mutating func string(_ field: Int, _ value: String) {
        lengthDelimited(field, Array(value.utf8))
    }

    /// An embedded message field.
    package mutating func message(_ field: Int, _ build: (inout ProtobufWriter) -> Void) {
        var inner = ProtobufWriter()
        build(&inner)
        lengthDelimited(field, inner.bytes)
    }

    /// A packed repeated varint field (proto3's encoding of `repeated uint64` / `int64`).
    package mutating func packed(_ field: Int, _ values: [UInt64]) {
        guard !values.isEmpty else { return }
        var inner = ProtobufWriter()
        for value in values { inner.varint(value) }
        lengthDelimited(field, inner.bytes)
    }

    /// A `bytes` field (left out when empty, as proto3 does).
    package mutating func byteString(_ field: Int, _ value: [UInt8]) {
        guard !value.isEmpty else { return }
        lengthDelimited(field, value)
    }

    /// A `fixed64` field: eight bytes, little-endian (OTLP's `time_unix_nano`).
    package mutating func fixed64(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, wireType: 1)
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    /// A packed repeated `fixed64` field: eight little-endian bytes a value (OTLP's
    /// `timestamps_unix_nano`).
    package mutating func packedFixed64(_ field: Int, _ values: [UInt64]) {
        guard !values.isEmpty else { return }
        var inner: [UInt8] = []
        inner.reserveCapacity(values.count * 8)
        for value in values {
            for shift in stride(from: 0, to: 64, by: 8) { inner.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        lengthDelimited(field, inner)
    }

    /// Bytes already encoded as fields of this message (a message built apart, then placed).
    package mutating func append(raw fields: [UInt8]) {
        bytes.append(contentsOf: fields)
    }

    /// An embedded message written even when empty: a repeated table's placeholder keeps its index.
    package mutating func emptyMessage(_ field: Int) {
        lengthDelimited(field, [])
    }

    private mutating func lengthDelimited(_ field: Int, _ payload: [UInt8]) {
        tag(field, wireType: 2)
        varint(UInt64(payload.count))
        bytes.append(contentsOf: payload)
    }

    private mutating func tag(_ field: Int, wireType: UInt64) {
        varint(UInt64(field) << 3 | wireType)
    }

    private mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }
}
