import Foundation
import StallwatchExport

/// What an OTLP/HTTP receiver said in its answer's body, beyond its status.
package enum OTLPAnswerBody {
    /// `ExportProfilesServiceResponse.partial_success` of a 2xx answer: how many profiles the
    /// receiver rejected, and why; `nil` when the answer says none was (no field, 0 and no text).
    package static func partialSuccess(_ body: [UInt8]) -> (rejected: Int64, message: String)? {
        guard let inner = ProtobufFields(body).bytes(1) else { return nil }
        let fields = ProtobufFields(inner)
        let rejected = Int64(truncatingIfNeeded: fields.varint(1) ?? 0)
        let message = fields.bytes(2).map { String(decoding: $0, as: UTF8.self) } ?? ""
        return rejected == 0 && message.isEmpty ? nil : (rejected, message)
    }

    /// The message of a failed answer: `google.rpc.Status.message` when the body is one (OTLP/HTTP's
    /// error body), else the body as short text when it reads as text; `nil` when empty.
    package static func failureMessage(_ body: [UInt8], contentType: String?) -> String? {
        guard !body.isEmpty else { return nil }
        if contentType?.lowercased().hasPrefix("application/x-protobuf") == true {
            return ProtobufFields(body).bytes(2).map { String(decoding: $0, as: UTF8.self) }.flatMap { $0.isEmpty ? nil : $0 }
        }
        let text = String(decoding: body.prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty || text.contains("\u{FFFD}") ? nil : text
    }
}
