/// The top-level fields of one protobuf message, read without a schema: what an OTLP receiver's
/// short answers (`Export…ServiceResponse`, `google.rpc.Status`) need. Stops at the first malformed
/// field (a truncated varint or length): what was read before it stands.
package struct ProtobufFields: Sendable {
    /// One field: its number and its value (a varint as is; fixed32/64 as integers; length-delimited
    /// bytes as they are).
    package enum Value: Sendable, Equatable {
        case varint(UInt64)
        case bytes([UInt8])
    }

    /// The fields in the order they came (a repeated field comes once per value).
    package private(set) var fields: [(number: Int, value: Value)] = []

    /// Reads `bytes`.
    package init(_ bytes: [UInt8]) {
        var at = 0
        func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while at < bytes.count, shift < 64 {
                let byte = bytes[at]
                at += 1
                value |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }
        while at < bytes.count, let key = varint() {
            let number = Int(truncatingIfNeeded: key >> 3)
            switch key & 7 {
            case 0:
                guard let value = varint() else { return }
                fields.append((number, .varint(value)))
            case 1, 5:
                let width = key & 7 == 1 ? 8 : 4
                guard bytes.count - at >= width else { return }
                var value: UInt64 = 0
                for i in 0..<width { value |= UInt64(bytes[at + i]) << (8 * UInt64(i)) }
                at += width
                fields.append((number, .varint(value)))
            case 2:
                guard let length = varint(), length <= UInt64(bytes.count - at) else { return }
                fields.append((number, .bytes(Array(bytes[at..<at + Int(length)]))))
                at += Int(length)
            default:
                return   // groups (deprecated) and unknown wire types: nothing after them is trusted
            }
        }
    }

    /// The last varint of field `number` (proto3: the last value wins).
    package func varint(_ number: Int) -> UInt64? {
        fields.last { $0.number == number }.flatMap { if case .varint(let v) = $0.value { v } else { nil } }
    }

    /// The last length-delimited value of field `number`.
    package func bytes(_ number: Int) -> [UInt8]? {
        fields.last { $0.number == number }.flatMap { if case .bytes(let b) = $0.value { b } else { nil } }
    }
}
