/// A configuration value that cannot work, with enough detail to fix it without reading code.
public struct ConfigurationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The field's name as it appears in ``WatchdogConfiguration`` (e.g. `"cpu.topThreadCount"`).
    public var field: String
    /// The rejected value, rendered as text.
    public var value: String
    /// What the value must satisfy.
    public var requirement: String

    /// Creates an error for `field` holding `value`, which fails `requirement`.
    public init(field: String, value: String, requirement: String) {
        self.field = field
        self.value = value
        self.requirement = requirement
    }

    /// E.g. `sampleInterval = 3 seconds: must be shorter than threshold (2 seconds)`.
    public var description: String { "\(field) = \(value): \(requirement)" }
}
