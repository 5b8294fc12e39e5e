/// Why an ``OTLPProfileExporter`` cannot be made: a malformed `OTEL_*` variable or configuration
/// value, or a build without the `OTLPProfiles` trait. The message names the variable and the value.
public struct OTLPExporterError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, in one sentence that names the setting.
    public let message: String

    /// An error saying `message`.
    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
