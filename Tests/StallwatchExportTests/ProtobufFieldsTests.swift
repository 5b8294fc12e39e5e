import StallwatchExport
import Testing

@Suite("Protobuf fields")
struct ProtobufFieldsTests {
    @Test("reads what the writer wrote: varints, fixed64, bytes; the last value of a field wins")
    func readsTheWriter() {
        var w = ProtobufWriter()
        w.uint64(1, 300)
        w.string(2, "first")
        w.fixed64(3, 0x0102_0304_0506_0708)
        w.string(2, "second")
        let fields = ProtobufFields(w.bytes)
        #expect(fields.varint(1) == 300)
        #expect(fields.varint(3) == 0x0102_0304_0506_0708)
        #expect(fields.bytes(2) == Array("second".utf8))
        #expect(fields.fields.count == 4)
        #expect(fields.varint(9) == nil && fields.bytes(1) == nil)
    }

    @Test("a truncated varint or a length past the end stops the read; what came before stands")
    func stopsAtDamage() {
        #expect(ProtobufFields([0x08, 0x96]).fields.isEmpty)                       // varint cut short
        let cut = ProtobufFields([0x08, 0x01, 0x12, 0x09, 0x61])                   // 9 bytes promised, 1 given
        #expect(cut.varint(1) == 1 && cut.bytes(2) == nil)
        #expect(ProtobufFields([0x0b, 0x08, 0x01]).fields.isEmpty)                  // a group: not read
        #expect(ProtobufFields([]).fields.isEmpty)
    }
}
