import StallwatchPolicy
import StallwatchReport

/// An instant `ms` milliseconds after an arbitrary origin far from zero (so `-` never saturates).
func at(ms: Int64) -> MonotonicInstant {
    MonotonicInstant(nanoseconds: 1_000_000_000_000) + .milliseconds(ms)
}

/// A sample from root-first function keys (easier to read than leaf-first in tests).
func sample(_ rootFirst: FrameKey...) -> StackSample {
    StackSample(frames: rootFirst.reversed())
}

/// The default configuration, or one with a different threshold.
func configuration(threshold: Duration = .seconds(2)) -> WatchdogConfiguration {
    WatchdogConfiguration(threshold: threshold)
}
